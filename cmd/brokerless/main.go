package main

import "os"

func main() {
	ctx, stop := interruptContext(os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}
