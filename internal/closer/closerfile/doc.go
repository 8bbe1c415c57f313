// Package closerfile reads the closers file: which closer closes the tasks
// of each kind. The canceller takes it with --closers, the reconcile command
// too.
//
//	closers:
//	  order-timeout:              # a task kind (hourglass-kind, or --default-kind)
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
// File.Open opens the closer of each kind and returns it, by kind, with the
// limits the file sets on its closes (rate_limit, rate_burst); applying
// them is the caller's: the canceller's command builds its routes from
// them.
package closerfile
