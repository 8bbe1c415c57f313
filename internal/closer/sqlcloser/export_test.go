package sqlcloser

// KeyUnique reports whether New proved the key column unique, so that the
// default close runs on its own, in autocommit.
func KeyUnique(c *Closer) bool { return c.keyUnique }
