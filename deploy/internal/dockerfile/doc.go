// Package dockerfile reads what the deploy tests check of the image recipe
// without a container engine: a Dockerfile's instructions grouped into
// stages (Parse), the shell words of a RUN line (ShellWords), the go build
// command of a stage (File.GoBuild), and which paths a .dockerignore leaves
// out of the build context (ParseIgnore, Ignore.Ignored).
//
// It understands the subset of the formats that Hourglass's own Dockerfile
// and .dockerignore use: continuation lines, comments, ARG defaults before
// the first FROM, quotes and backslashes in shell words, and the **, *, ?
// and ! of ignore patterns. It is not a shell: there is no expansion, and
// operators such as && are words of their own only when spaces separate
// them.
package dockerfile
