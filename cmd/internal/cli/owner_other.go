//go:build !unix

package cli

import "os"

// fileOwner is 0 where files have no owner id.
func fileOwner(os.FileInfo) int { return 0 }
