package main

// The dispatcher's subcommands join the "brokerless webhook" group
// (webhookCmds, in webhook.go).
func init() {
	webhookCmds = append(webhookCmds, &webhookServeCmd, &webhookSendCmd, &webhookEndpointsAddCmd, &webhookEndpointsListCmd, &webhookEndpointsRemoveCmd)
}
