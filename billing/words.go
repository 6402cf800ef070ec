package billing

import "strconv"

// FormatCredits writes an amount of credits for people: "1 credit",
// "5,000 credits", "-3 credits".
func FormatCredits(n int64) string {
	s := groupThousands(uint64(n))
	if n < 0 {
		s = "-" + groupThousands(uint64(-n))
	}
	if n == 1 {
		return s + " credit"
	}
	return s + " credits"
}

// formatDays writes a whole number of days: "1 day", "12 days".
func formatDays(n int64) string {
	if n == 1 {
		return "1 day"
	}
	return strconv.FormatInt(n, 10) + " days"
}

// LowDaysWords says how long balance lasts for a reader whose line is
// line (LowLine: what LowWindow costs them): "about 5 days", "less than a
// day", or "" when there is no line.
func LowDaysWords(balance, line int64) string {
	if line <= 0 {
		return ""
	}
	days := float64(balance) * LowWindow.Hours() / 24 / float64(line)
	if days < 1 {
		return "less than a day"
	}
	return "about " + formatDays(int64(days))
}
