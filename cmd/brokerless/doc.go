// Command brokerless is the brokerless toolkit's one binary: multicast
// publishers and subscribers for the command line, and a demo that shows
// loss being recovered on this machine.
//
// Usage:
//
//	brokerless <command> [flags]
//
// Run "brokerless help" for the list of commands and
// "brokerless <command> --help" for a command's flags and examples.
//
// Each command is one file that defines a command value; the table in
// commands.go lists them. Exit status: 0 on success, 1 when the command
// failed, 2 for a mistake in the command line. SIGINT and SIGTERM end a
// command cleanly; a second one, while that clean end waits, exits at
// once with status 1.
package main
