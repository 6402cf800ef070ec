package web

import (
	"slices"
	"strings"
	"time"
)

// commonZones is the time-zone select's list: the IANA zones most people
// live in, grouped roughly west to east. A zone not in it (sent by the
// browser script or saved earlier) is added to the select when shown.
var commonZones = []string{
	"UTC",
	"Pacific/Honolulu", "America/Anchorage", "America/Los_Angeles", "America/Vancouver", "America/Denver",
	"America/Phoenix", "America/Chicago", "America/Mexico_City", "America/New_York", "America/Toronto",
	"America/Bogota", "America/Lima", "America/Caracas", "America/Halifax", "America/Santiago",
	"America/Sao_Paulo", "America/Argentina/Buenos_Aires", "America/St_Johns", "Atlantic/Azores",
	"Europe/London", "Europe/Dublin", "Europe/Lisbon", "Africa/Lagos", "Africa/Casablanca",
	"Europe/Paris", "Europe/Berlin", "Europe/Madrid", "Europe/Rome", "Europe/Amsterdam", "Europe/Brussels",
	"Europe/Zurich", "Europe/Vienna", "Europe/Stockholm", "Europe/Oslo", "Europe/Copenhagen", "Europe/Warsaw",
	"Europe/Prague", "Europe/Budapest", "Africa/Johannesburg", "Africa/Cairo", "Europe/Athens",
	"Europe/Helsinki", "Europe/Kyiv", "Europe/Bucharest", "Europe/Istanbul", "Asia/Jerusalem",
	"Africa/Nairobi", "Europe/Moscow", "Asia/Riyadh", "Asia/Tehran", "Asia/Dubai", "Asia/Kabul",
	"Asia/Karachi", "Asia/Tashkent", "Asia/Kolkata", "Asia/Kathmandu", "Asia/Dhaka", "Asia/Yangon",
	"Asia/Bangkok", "Asia/Jakarta", "Asia/Ho_Chi_Minh", "Asia/Shanghai", "Asia/Hong_Kong", "Asia/Taipei",
	"Asia/Singapore", "Asia/Manila", "Australia/Perth", "Asia/Seoul", "Asia/Tokyo", "Australia/Adelaide",
	"Australia/Darwin", "Australia/Brisbane", "Australia/Sydney", "Australia/Melbourne", "Pacific/Guam",
	"Pacific/Noumea", "Pacific/Auckland", "Pacific/Fiji", "Pacific/Tongatapu",
}

// regionZones guesses a zone from the region of the browser's preferred
// language (Accept-Language "en-GB" → Europe/London), for people without
// JavaScript. Countries spanning several zones get their most populous one;
// the select lets people change it.
var regionZones = map[string]string{
	"US": "America/New_York", "CA": "America/Toronto", "MX": "America/Mexico_City", "BR": "America/Sao_Paulo",
	"AR": "America/Argentina/Buenos_Aires", "CL": "America/Santiago", "CO": "America/Bogota", "PE": "America/Lima",
	"GB": "Europe/London", "IE": "Europe/Dublin", "PT": "Europe/Lisbon", "ES": "Europe/Madrid", "FR": "Europe/Paris",
	"DE": "Europe/Berlin", "AT": "Europe/Vienna", "CH": "Europe/Zurich", "IT": "Europe/Rome", "NL": "Europe/Amsterdam",
	"BE": "Europe/Brussels", "SE": "Europe/Stockholm", "NO": "Europe/Oslo", "DK": "Europe/Copenhagen",
	"FI": "Europe/Helsinki", "PL": "Europe/Warsaw", "CZ": "Europe/Prague", "HU": "Europe/Budapest",
	"GR": "Europe/Athens", "RO": "Europe/Bucharest", "UA": "Europe/Kyiv", "TR": "Europe/Istanbul",
	"RU": "Europe/Moscow", "IL": "Asia/Jerusalem", "EG": "Africa/Cairo", "ZA": "Africa/Johannesburg",
	"NG": "Africa/Lagos", "KE": "Africa/Nairobi", "SA": "Asia/Riyadh", "AE": "Asia/Dubai", "IN": "Asia/Kolkata",
	"PK": "Asia/Karachi", "BD": "Asia/Dhaka", "TH": "Asia/Bangkok", "ID": "Asia/Jakarta", "VN": "Asia/Ho_Chi_Minh",
	"CN": "Asia/Shanghai", "HK": "Asia/Hong_Kong", "TW": "Asia/Taipei", "SG": "Asia/Singapore", "PH": "Asia/Manila",
	"KR": "Asia/Seoul", "JP": "Asia/Tokyo", "AU": "Australia/Sydney", "NZ": "Pacific/Auckland",
}

// zoneFromAcceptLanguage returns the zone of the first language tag with a
// known region, or "UTC".
func zoneFromAcceptLanguage(h string) string {
	for _, part := range strings.Split(h, ",") {
		tag, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		sub := strings.Split(tag, "-")
		for _, s := range sub[1:] {
			if len(s) == 2 {
				if z, ok := regionZones[strings.ToUpper(s)]; ok {
					return z
				}
			}
		}
	}
	return "UTC"
}

// validZone reports whether z is an IANA zone name we can use ("Local" is not).
func validZone(z string) bool {
	if z == "" || strings.EqualFold(z, "local") || len(z) > 64 {
		return false
	}
	_, err := time.LoadLocation(z)
	return err == nil
}

// zoneOptions is the select's list with cur in it.
func zoneOptions(cur string) []string {
	if cur == "" || slices.Contains(commonZones, cur) {
		return commonZones
	}
	return append([]string{cur}, commonZones...)
}
