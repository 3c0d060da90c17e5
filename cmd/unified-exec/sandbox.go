package main

func cmdSandbox(args []string) int {
	errorf("sandbox: not available yet")
	return exitInternal
}
