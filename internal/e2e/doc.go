// Package e2e holds the acceptance tests of the pipeline: a scheduler, the
// router and the canceller on one in-process kfake broker, checked against
// the invariants of DESIGN.md (never early, nothing lost, duplicates only
// from crashes and bounded, malformed records to the dead-letter topic),
// and on brokers of their own with SASL and ACLs on, each service and
// command as its own principal with the ACLs of docs/security.md.
package e2e
