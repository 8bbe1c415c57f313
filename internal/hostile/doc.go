// Package hostile builds what a hostile producer sends to Hourglass's
// topics, for the tests and the benchmark that prove Hourglass survives it.
package hostile
