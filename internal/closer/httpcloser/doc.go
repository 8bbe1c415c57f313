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
// KiB of a body is read; an "outcome" among the members read counts, also
// when the object goes on beyond them. Errors quote its first 200 bytes
// and name the method, the URL and the task id.
//
// Redirects are not followed (a POST redirected with 301 or 302 would turn
// into a GET, and credentials must not follow a request elsewhere).
//
// # Batches
//
// With batch_url instead of url, the closes that are ready at the same
// moment go out as one request: POST batch_url, Content-Type
// application/json, the configured headers and credentials, and a JSON
// array with one object per close:
//
//	[{"id":"42","kind":"order-timeout","due_ms":1767225600000,"attempt":1,
//	  "idempotency_key":"hourglass:order-timeout:42","payload":{"total":"9.90"}}, ...]
//
// "payload" is the task payload when it is JSON, otherwise "payload_base64"
// carries it (standard base64); neither with an empty payload or body:
// none. due_ms is 0 when unknown. A task id or kind that is not UTF-8
// cannot be carried and is a permanent error. Nothing waits for a batch
// to fill: two batch requests run at once at most, a close that finds one
// free goes out at once (a batch of one), and the closes that come while
// both run go together in the next, up to max_batch (100) and 4 MiB of
// body. A task id is in a batch at most once: a second close of an id
// waits for the next batch (the canceller never closes one id twice at
// once anyway).
//
// The endpoint answers 2xx with a JSON array of one object per item, each
// naming the id of its item, in any order:
//
//	[{"id":"42","status":200},
//	 {"id":"43","status":200,"outcome":"skipped","detail":"PAID"},
//	 {"id":"44","status":503,"error":"lock timeout","retry_after":5}]
//
// Each object is read as a single close's answer would be: "status" (an
// HTTP status code) maps as in the table above, "outcome" and "detail" as
// in an answer body, and an object with an "outcome" and no "status" means
// 200. "id" is required: the objects are matched to the closes by id, never
// by position, since an answer in another order without ids would give
// each close another task's outcome. A close that no object names (the
// objects have no id, or ids not in the batch, or there are too few), or
// that two objects name, gets a retryable error that says so. A retryable
// item may say "retry_after" (seconds; else the answer's Retry-After
// applies); "error" is quoted in the close's error. Each close gets its
// own result: a failing item fails only itself, and the canceller retries
// or dead-letters it alone, as it would a single close. An object with
// neither status nor outcome, or a status that is not a code, is a
// retryable error for that item.
//
// An answer about the batch as a whole fails every close in it, each on
// its own (each is retried on its own schedule, and may go out in another
// batch):
//
//	2xx that is not such an array      retryable (malformed: not JSON, not an array of objects, over 4 MiB)
//	408, 413, 425, 429, 5xx            retryable (Retry-After honoured; 413 says to lower max_batch)
//	network error, timeout             retryable
//	404                                permanent: there is no batch endpoint at batch_url
//	3xx, any other 4xx                 permanent
//
// So an endpoint must answer 2xx with an item per close even when some of
// them fail, and keep whole-batch errors for problems of the whole batch.
// It must be idempotent per item, as for single closes: a close may come
// again in a later batch after a timeout or a crash. At most 4 MiB of an
// answer is read. Config.Timeout bounds a batch request; a close whose
// context ends while it waits is left out of its batch.
//
// # Credentials
//
// BearerToken and BasicAuth.Password are credential.Secrets, resolved again at
// most every 10 seconds, so a rotated Kubernetes Secret mounted as a file is
// picked up. When the server answers 401 the secret is read again at once
// and, if it changed, the request is sent once more with the new value.
package httpcloser
