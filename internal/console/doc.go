// Package console is the web console of Hourglass: server-rendered pages
// over the pipeline's Kafka topics and ClickHouse tables.
//
//   - / (overview): the deadlines falling due per minute over the next
//     hours, from the deadline index, and the outcomes and lateness of the
//     close attempts of a recent window (package report);
//   - /task: one task's timeline: its deadlines, cancellations and close
//     attempts;
//   - /dlq: dead letters, filtered by reason, source topic and task id, and
//     their replay, a dry run first (package deadletter);
//   - the actions: replay, cancel and reschedule a task (POST only).
//
// The console is read-only unless Config.AllowActions is set: read-only,
// no action form is shown and every action request is refused with 403.
// With Config.TokenFile set, every page but the login form needs the token,
// as a bearer header or through the login form's cookie; with
// Config.TLS.ClientCAFile, the TLS handshake needs a client certificate.
// State-changing requests are POSTs, checked by the standard library's
// cross-origin protection and a per-browser token in every form. Every page
// is rendered by html/template under a Content-Security-Policy of
// default-src 'self' without inline scripts; strings from records are
// escaped, and those with control or other non-graphic characters are
// shown as Go string literals. Its CSS is embedded: no request leaves for
// another origin.
//
// It knows nothing of the command line: `hourglass console`
// (internal/cmd/consolecmd) builds its Config from flags.
package console
