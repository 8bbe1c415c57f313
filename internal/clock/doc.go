// Package clock is the time source of Hourglass's services, so that tests can
// drive time instead of waiting for it.
package clock
