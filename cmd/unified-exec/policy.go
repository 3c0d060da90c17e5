package main

func cmdPolicy(args []string) int {
	errorf("policy: not available yet")
	return exitInternal
}
