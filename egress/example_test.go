package egress_test

import (
	"fmt"

	"github.com/unified-exec/unified-exec/egress"
	"github.com/unified-exec/unified-exec/policy"
)

// Rules decide by the name the client asked for, then by every address
// the proxy would connect to.
func ExampleRules_Decide() {
	rules, _ := egress.Compile(policy.Network{
		Allow: []string{"pypi.org", "*.pythonhosted.org", "10.0.0.5:5432"},
		Deny:  []string{"evil.pythonhosted.org"},
	})
	for _, hp := range []struct {
		host string
		port uint16
	}{{"pypi.org", 443}, {"files.pythonhosted.org", 443}, {"evil.pythonhosted.org", 443}, {"pypi.org", 22}, {"10.0.0.5", 5432}, {"169.254.169.254", 80}} {
		d := rules.Decide(hp.host, hp.port)
		fmt.Printf("%s:%d %s\n", hp.host, hp.port, d.Verdict)
	}
	// Output:
	// pypi.org:443 allow
	// files.pythonhosted.org:443 allow
	// evil.pythonhosted.org:443 deny
	// pypi.org:22 deny
	// 10.0.0.5:5432 allow
	// 169.254.169.254:80 deny
}
