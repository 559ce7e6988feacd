package publish

// WithSys returns o with link and renameNoReplace replaced (nil keeps the
// real one), to simulate file systems without them.
func WithSys(o Options, link, renameNoReplace func(oldname, newname string) error) Options {
	o.sys = sys{link: link, renameNoReplace: renameNoReplace}
	return o
}

// TempPrefix is the prefix of temporary file names.
const TempPrefix = tempPrefix
