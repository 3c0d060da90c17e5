// Package defaultpolicy embeds the repository's policy.toml, the policy
// that applies when unified-exec is given no --policy. Read it through
// policy.Default.
package defaultpolicy

import _ "embed"

// TOML is the text of the default policy.toml.
//
//go:embed policy.toml
var TOML []byte
