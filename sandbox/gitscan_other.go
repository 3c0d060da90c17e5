//go:build !unix

package sandbox

import "io/fs"

// statKey: no inode here, so no cache.
func statKey(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }
