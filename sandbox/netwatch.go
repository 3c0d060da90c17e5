package sandbox

// listenable reports whether a plan's network is fully off, so that its
// socket refusals can be counted: every family but AF_UNIX is refused.
func listenable(plan Plan) bool { return plan.Enforced() && !plan.Network && !plan.Egress }
