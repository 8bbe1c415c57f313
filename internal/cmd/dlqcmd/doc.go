// Package dlqcmd is `hourglass dlq list|replay`: it reads the dead-letter
// topic without a consumer group, prints the dead letters that match its
// filters, and replays them to the topics they came from.
package dlqcmd
