// Package kafkacloser closes tasks by producing a close command to a Kafka
// topic, for event-driven order services that take commands from Kafka
// rather than an HTTP API. A closers file configures it per task kind:
//
//	closers:
//	  reminder:
//	    kafka:
//	      topic: sms.reminders
//
// The command goes to the canceller's own cluster. Its record has:
//
//	key                          the task id
//	value                        a JSON Command (value: event, the default) or the task payload (value: payload)
//	hourglass-kind               the task kind
//	hourglass-due                the due time, unix milliseconds
//	hourglass-attempt            the close attempt, from 1
//	hourglass-idempotency-key    hourglass:<kind>:<id>, the same for every attempt
//
// A close is Closed once the command is acknowledged by all in-sync
// replicas; the Result detail is "topic[partition]@offset". What the command
// does is up to its consumer, which must be idempotent: a task can be
// delivered more than once (after a crash or a retry), and the producer's
// idempotence only removes duplicates of its own internal retries. The
// idempotency key header lets the consumer drop repeated commands.
//
// Closes that are ready at the same moment go out in one produce request,
// and none waits for another: the closer does not linger, a close is sent
// at once when one of the client's request slots (5 per broker, franz-go's
// bound for idempotent writes) is free, and the closes that come while
// all five are taken are sent together in the next request. At low load
// every close is a request of its own; under load, many share one
// (docs/closers.md has the figures).
//
// Produce errors are retryable (the canceller tries again with backoff),
// except a record too large for the topic and an invalid topic, which are
// permanent (the task goes to the dead-letter topic). A topic that does not
// exist is a retryable error: the closer does not create topics.
package kafkacloser
