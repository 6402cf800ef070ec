package digest

import "time"

// Edition names the issue of slot in its subject, on the reader's clock:
// "Tue 24 Nov", with the time too ("Tue 24 Nov 19:00") when the schedule
// has another slot that day. A schedule or zone that no longer parses
// gives the date in UTC.
func Edition(schedule, zone string, slot time.Time) string {
	sched, err := ParseSchedule(schedule, zone)
	if err != nil {
		return slot.UTC().Format("Mon 2 Jan")
	}
	local := slot.In(sched.loc)
	day := local.Format("Mon 2 Jan")
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, sched.loc)
	earlier := sched.Next(midnight.Add(-time.Nanosecond)).Before(slot)
	later := sched.Next(slot).In(sched.loc).Format(time.DateOnly) == local.Format(time.DateOnly)
	if earlier || later {
		return day + " " + local.Format("15:04")
	}
	return day
}
