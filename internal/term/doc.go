// Package term writes strings that come from records, or from anywhere an
// operator does not control, so that they are safe to print to a terminal:
// [Quote] turns a string with a control, format or invalid character into a
// Go literal, and [EscapeJSON] escapes the same characters in JSON text. The
// commands print task ids, kinds, reasons and topics through it, and so do
// the reports, whose HTML escapes what Quote returns.
package term
