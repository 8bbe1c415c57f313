// Package manifest is the record of what a load test scheduled: a JSON Lines
// file whose first line is a Header and every further line an Entry, one per
// task the broker acknowledged. The k6 extension (k6/x/hourglass) writes it;
// the verify command reads it and joins it with the outcome events.
//
//	{"manifest":1,"run_id":"20260918t101500-3f2a","id_prefix":"lt-20260918t101500-3f2a-","prefix":"hourglass.","tiers":"1s,2s,5s,10s","started_ms":1789726500000}
//	{"id":"lt-20260918t101500-3f2a-1","due_ms":1789726503250,"scheduled_ms":1789726500001,"paid":true,"shape":"between_tiers"}
package manifest
