// Package field names the field of a configuration that a problem is
// about, so that a library's Validate can speak of its own Config and leave
// the words a user types to the command that reads them.
//
// A Validate returns the errors.Join of one [Errorf] per problem, each
// naming a Go field ("MaxDelay", or "Limits.KeyBytes" through a nested
// struct) and, through [Ref], any other field its message mentions. Printed
// as it is, such a problem names the fields: "MaxDelay: 0s: must be
// positive". A command that sets the fields from flags maps each field to
// its flag (internal/cli), and the user reads "--max-delay
// (HOURGLASS_MAX_DELAY): 0s: must be positive".
package field
