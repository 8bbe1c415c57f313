// Package suggest finds what a user most likely meant by a name that is
// not one of those allowed, for the "did you mean" of an unknown flag,
// command or configuration key.
package suggest
