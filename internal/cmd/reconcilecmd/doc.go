// Package reconcilecmd is `hourglass reconcile`: it scans an order table
// for overdue unpaid orders the pipeline missed and closes them.
package reconcilecmd
