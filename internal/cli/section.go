package cli

import "fmt"

// Essential is the title of the section [FlagSet.Usage] shows first: the
// flags that every deployment sets or must know about (see
// [FlagSet.Essential]).
const Essential = "Essential"

// Sections sets the order of Usage's sections after Essential: titles
// first, in the order given, then any other section in the order it was
// first named. A command calls it before registering flags that name
// sections of their own (service.Common does), to put its own first.
func (f *FlagSet) Sections(titles ...string) {
	for _, t := range titles {
		f.addSection(t)
	}
}

// Section puts the flags registered after it into the section title of
// Usage, until the next Section; "" ends sections, and the flags then
// registered are listed last under "Other flags" (or "Flags" when there is
// no section). Within a section, flags are listed in registration order.
func (f *FlagSet) Section(title string) {
	f.addSection(title)
	f.section = title
}

// Move puts the flags names, registered already (by a shared function,
// say), into the section title. It panics on a name never registered, as
// registering a name twice does.
func (f *FlagSet) Move(title string, names ...string) {
	f.addSection(title)
	for _, name := range names {
		f.mustEntry(name).section = title
	}
}

// Essential puts the flags names, registered already, into the section
// Usage shows first, "Essential", in the order given: what a user must set
// or know to run the command at all (the brokers, the tiers, the topic
// prefix; for the canceller its closers). It panics on a name never
// registered.
func (f *FlagSet) Essential(names ...string) {
	for _, name := range names {
		e := f.mustEntry(name)
		if !e.essential {
			e.essential = true
			f.essential = append(f.essential, e)
		}
	}
}

func (f *FlagSet) addSection(title string) {
	if title == "" || title == Essential {
		return
	}
	for _, t := range f.sections {
		if t == title {
			return
		}
	}
	f.sections = append(f.sections, title)
}

func (f *FlagSet) mustEntry(name string) *entry {
	e, ok := f.byName[name]
	if !ok {
		panic(fmt.Sprintf("cli: no flag %s to place in a section", name))
	}
	return e
}

// group is a section of Usage with its flags.
type group struct {
	title   string
	entries []*entry
}

// groups returns Usage's sections in order, the empty ones left out:
// Essential, the named sections, then the flags of no section.
func (f *FlagSet) groups() []group {
	var out []group
	if len(f.essential) > 0 {
		out = append(out, group{Essential, f.essential})
	}
	bySection := make(map[string][]*entry)
	for _, e := range f.entries {
		if !e.essential {
			bySection[e.section] = append(bySection[e.section], e)
		}
	}
	for _, t := range f.sections {
		if len(bySection[t]) > 0 {
			out = append(out, group{t, bySection[t]})
		}
	}
	if rest := bySection[""]; len(rest) > 0 {
		title := "Other flags"
		if len(out) == 0 {
			title = "Flags"
		}
		out = append(out, group{title, rest})
	}
	return out
}
