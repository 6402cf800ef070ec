package mailer

import "testing"

func TestWithoutLeadingImage(t *testing.T) {
	tests := []struct {
		name, in, want string
		dropped        bool
	}{
		{"linked image in a paragraph", `<p><a href="https://v.example/1"><img src="t.jpg" alt=""></a></p><p>Text.</p>`, `<p>Text.</p>`, true},
		{"bare image", `<img src="t.jpg"> Text after`, ` Text after`, true},
		{"text first", `<p>Intro</p><p><img src="t.jpg"></p>`, `<p>Intro</p><p><img src="t.jpg"></p>`, false},
		{"text beside the image stays", `<p><img src="t.jpg"> caption</p>`, `<p> caption</p>`, true},
		{"no image", `<p>Only text</p>`, `<p>Only text</p>`, false},
		{"empty block before", `<div> </div><figure><img src="a.jpg"><figcaption>Sea</figcaption></figure>`, `<div> </div><figure><figcaption>Sea</figcaption></figure>`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, dropped := withoutLeadingImage(tc.in)
			if got != tc.want || dropped != tc.dropped {
				t.Errorf("got %q, %v; want %q, %v", got, dropped, tc.want, tc.dropped)
			}
		})
	}
}
