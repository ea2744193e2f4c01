package main

// webhookCmds is the "brokerless webhook" command group, in the order
// its help lists them. A subcommand is a file defining one command value
// named "webhook NAME" plus one line here.
var webhookCmds = []*command{
	&webhookServeCmd,
	&webhookSendCmd,
	&webhookEndpointsAddCmd,
	&webhookEndpointsListCmd,
	&webhookEndpointsRemoveCmd,
	&webhookListenCmd,
	&webhookSignCmd,
}

// webhookAbout is shown above the group's list of subcommands.
const webhookAbout = `Webhooks signed as the Standard Webhooks specification defines them
(webhook-id, webhook-timestamp, webhook-signature: v1,<HMAC-SHA256>),
and the tools to send, receive and check them: a dispatcher with a
durable outbox, retries and an HTTP API, and a receiver.`
