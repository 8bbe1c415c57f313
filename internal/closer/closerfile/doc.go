// Package closerfile reads the closers file: which closer closes the tasks
// of each kind. The canceller reads it, and so does the reconcile command.
//
//	closers:
//	  order-timeout:              # a task kind (hourglass-kind, or the canceller's default kind)
//	    sql:
//	      driver: postgres
//	      dsn: {env: ORDERS_DSN}
//	    rate_limit: 200           # closes per second of this kind; optional
//	  confirm-receipt:
//	    http:
//	      url: https://orders.internal/api/orders/{id}/confirm
//	  reminder:
//	    kafka:
//	      topic: sms.reminders
//	  audit:
//	    log: {}
//
// Each kind has exactly one of sql, http, kafka and log. Secrets are
// written {env: NAME} or {file: PATH}, durations as strings with a unit
// ("5s", "250ms"). Unknown keys are errors, and every problem of a file is
// reported at once, each with its line and place in the file
// (closers.yaml:7: closers.order-timeout.sql.table: ...). A task whose kind
// is not in the file goes to the dead-letter topic (reason unknown_kind).
//
// The file is decoded by walking its YAML nodes and the Go types together,
// not by yaml's Decoder. With KnownFields, go.yaml.in/yaml/v3 goes on past
// unknown keys and type mismatches, but names each by a line alone and in
// Go's terms ("line 7: field timout not found in type kafkacloser.Config"):
// no dotted path, no keys to choose from, and no telling apart the keys of
// a flow mapping on one line. A duration it cannot parse ("1 minute")
// fails with an empty list of errors, and the error of a value that
// decodes itself (a secret written as a plain string) ends the decoding
// with no place at all. The walker leaves the decoding of each value to yaml and keeps only
// the structure and the reporting.
//
// File.Open opens the closer of each kind and returns it, by kind, with the
// limits the file sets on its closes (rate_limit, rate_burst); applying
// them is the caller's: the canceller's command builds its routes from
// them.
package closerfile
