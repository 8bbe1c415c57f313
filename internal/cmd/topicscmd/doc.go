// Package topicscmd is `hourglass topics`: it creates the pipeline's topics,
// or with --check only reports missing and different ones.
package topicscmd
