package model

// ChannelEmail is the default channel: email to the person's address. A
// subscription or digest with it has no target or secret.
const ChannelEmail = "email"

// ChannelChoice is a channel with its target and secret, as stored.
// Generated says the secret was made for this request (a webhook's
// signing secret when the person gave none): a delivery that exists
// already keeps its own (the store's SubscribeDelivery).
type ChannelChoice struct {
	Channel, Target, Secret string
	Generated               bool
}
