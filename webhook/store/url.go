package store

import "net/url"

// redactedUserinfo stands for the userinfo of a URL shown.
const redactedUserinfo = "xxxxx"

// DisplayURL is the endpoint's URL for logs, notices and the console:
// its userinfo, if any, replaced by "xxxxx", the user name as well as
// the password (a token is often given as the user name alone, which
// url.URL.Redacted would show). A URL that does not parse (the API
// stores only parsed URLs) is shown as "(invalid URL)".
func (e *Endpoint) DisplayURL() string {
	return RedactURL(e.URL)
}

// RedactURL is raw with its userinfo replaced (see Endpoint.DisplayURL).
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	if u.User != nil {
		u.User = url.User(redactedUserinfo)
	}
	return u.String()
}
