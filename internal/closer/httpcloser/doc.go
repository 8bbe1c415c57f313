// Package httpcloser closes tasks by calling the owning service's HTTP API:
// the order service keeps its own rules (is the order paid? already
// closed?) and Hourglass only tells it that the deadline has passed.
//
// A closers file configures it per task kind:
//
//	closers:
//	  confirm-receipt:
//	    http:
//	      url: https://orders.internal/api/orders/{id}/confirm
//	      bearer_token: {file: /var/run/secrets/orders/token}
//
// # Request
//
// Each close is one request: Config.Method (POST by default) to Config.URL
// with {id} and {kind} replaced by the escaped task id and kind, the task
// payload as the body (Config.Body), and these headers:
//
//	Idempotency-Key: hourglass:<kind>:<id>   same for every attempt and duplicate
//	Hourglass-Kind: <kind>
//	Hourglass-Due: <due, unix milliseconds>
//	Hourglass-Attempt: <attempt, from 1>
//	User-Agent: hourglass
//	Authorization: Bearer <token> | Basic <user:password>   when configured
//
// plus Config.Headers.
//
// Placed in the path, the escaped id stays one segment ("a/b" is sent as
// a%2Fb, "%2e" as %252e), but a segment "." or ".." would be resolved by
// servers and proxies that normalise paths: POST /api/orders/../cancel is
// POST /api/cancel to them. A task whose id or kind makes such a segment,
// as it stands or once the escaped '/', '\' and '.' are decoded (as nginx
// does before it resolves dot segments), is refused with a permanent error
// and no request: it goes to the dead-letter topic as close_failed. Ids in
// the query are sent whatever they hold.
//
// A task can be delivered more than once (after a crash
// or a retry), so the endpoint must be idempotent: closing a closed order
// answers 409 or 2xx with {"outcome": "already_closed"}, never an error.
//
// # Answer
//
//	2xx                              closed
//	409 Conflict                     conflict_outcome (already_closed, or skipped)
//	404 Not Found                    not_found
//	408, 425, 429, 5xx               retryable error (Retry-After honoured, at most 1h)
//	network error, timeout           retryable error
//	3xx, any other 4xx               permanent error (the task goes to the dead-letter topic)
//
// A 2xx or 409 answer whose body is a JSON object with an "outcome" of
// closed, already_closed, skipped or not_found reports that outcome instead,
// with its "detail" (at most 200 bytes) as the Result detail, so a service
// can answer 200 {"outcome": "skipped", "detail": "PAID"}. Any other
// "outcome" value is a permanent error: the service speaks a language this
// closer does not know. Bodies without an "outcome" are ignored. At most 64
// KiB of a body is read; errors quote its first 200 bytes and name the
// method, the URL and the task id.
//
// Redirects are not followed (a POST redirected with 301 or 302 would turn
// into a GET, and credentials must not follow a request elsewhere).
//
// # Credentials
//
// BearerToken and BasicAuth.Password are credential.Secrets, resolved again at
// most every 10 seconds, so a rotated Kubernetes Secret mounted as a file is
// picked up. When the server answers 401 the secret is read again at once
// and, if it changed, the request is sent once more with the new value.
package httpcloser
