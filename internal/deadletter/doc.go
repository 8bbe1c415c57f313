// Package deadletter reads the dead-letter topic and replays dead letters:
// Scan reads a range of the topic without a consumer group, committed
// records only, within bounded memory; Read decodes a dead letter's
// headers; a Rule says which topics a dead letter may go back to, and
// Replay builds the record that sends it there. `hourglass dlq` and the
// console share it.
package deadletter
