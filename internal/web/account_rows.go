package web

import (
	"net/url"
	"strconv"
	"time"

	"github.com/feedmail/feedmail/digest"
	"github.com/feedmail/feedmail/internal/forecast"
	"github.com/feedmail/feedmail/internal/links"
	"github.com/feedmail/feedmail/internal/model"
	"github.com/feedmail/feedmail/internal/store"
)

// subRow is one subscription as the account page shows it: its delivery,
// forecast (none when its publisher pays), pause, settings and channel.
func subRow(sub store.SubscriptionView, hist forecast.History, digestCost map[int64]string,
	ownerPaid map[int64]store.OwnerPaidStatus, now time.Time, zone string) accountSub {
	as := accountSub{SubscriptionView: sub, Title: orURL(sub.FeedTitle, sub.FeedURL),
		StatusURL: links.PathFeedStatus + "?url=" + url.QueryEscape(sub.FeedURL), Delivery: deliveryInstant,
		FeedWords: feedStateWords(sub.FeedState)}
	if sub.DigestID != nil {
		as.Delivery = "digest-" + strconv.FormatInt(*sub.DigestID, 10)
		as.DigestName = sub.DigestName
	}
	as.Forecast = subForecast(sub, hist, digestCost)
	as.Paused = pauseWords(sub.PausedAt, sub.PausedUntil, now, zone)
	if st, ok := ownerPaid[sub.ID]; ok {
		as.OwnerPaid, as.CanPay = ownerPaidWords(st)
		if !st.ReaderPays() {
			as.Forecast = "" // the publisher pays (or the notice period is free)
		}
	}
	as.Settings = settingsForm{Include: sub.IncludeTerms, Exclude: sub.ExcludeTerms, Format: orFull(sub.Format)}
	as.ChannelForm = channelFormOf(model.ChannelChoice{Channel: sub.Channel, Target: sub.Target, Secret: sub.ChannelSecret})
	return as
}

// digestRow is one digest as the account page shows it: its schedule in
// words (a preset's label, else the cron spec), next issue, feeds,
// forecast and channel.
func digestRow(dg store.Digest, feeds int, presets []digest.Preset, forecast string) digestForm {
	f := digestForm{ID: dg.ID, Name: dg.Name, Spec: dg.Schedule, Zone: dg.Timezone, Next: dg.NextSlotAt,
		Feeds: feeds, Preset: customSchedule,
		ChannelForm: channelFormOf(model.ChannelChoice{Channel: dg.Channel, Target: dg.Target, Secret: dg.ChannelSecret})}
	for _, p := range presets {
		if p.Spec == dg.Schedule {
			f.Preset = p.Key
			f.Schedule = p.Label
		}
	}
	if f.Schedule == "" {
		f.Schedule = "cron “" + dg.Schedule + "”"
	}
	f.Zones = zoneOptions(f.Zone)
	f.NextLocal = localTime(dg.NextSlotAt, dg.Timezone)
	f.Forecast = forecast
	return f
}
