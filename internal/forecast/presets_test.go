package forecast

import "github.com/feedmail/feedmail/digest"

// presets are package digest's presets, parsed in UTC as the product
// passes them (package subscribe).
var presets = func() []Preset {
	var out []Preset
	for _, p := range digest.Presets() {
		s, err := digest.ParseSchedule(p.Spec, "UTC")
		if err != nil {
			panic(err)
		}
		out = append(out, Preset{Key: p.Key, Slots: s})
	}
	return out
}()
