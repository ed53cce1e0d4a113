package notify

import (
	"encoding/json"
	"net/http"
	"strings"
)

// teams posts to a Microsoft Teams Workflows ("Post to a channel when a webhook request is
// received") webhook: a message with one Adaptive Card attachment, as Microsoft documents
// for webhooks (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook,
// "Send Adaptive Cards using an Incoming Webhook"):
//
//	{"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive",
//	  "contentUrl": null, "content": {"type": "AdaptiveCard", "version": "1.4", "body": [...]}}]}
//
// A TextBlock's text is Markdown: the characters that format or link in it are escaped with a
// backslash, and < and > as entities, so that a name a team chose stays text.
type teams struct{}

// teamsEscaper escapes the Markdown of an Adaptive Card's TextBlock.
var teamsEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "`", "\\`", "#", `\#`, "~", `\~`, "<", "&lt;", ">", "&gt;")

type teamsTextBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Wrap     bool   `json:"wrap"`
	Weight   string `json:"weight,omitempty"`
	Color    string `json:"color,omitempty"`
	FontType string `json:"fontType,omitempty"`
	Spacing  string `json:"spacing,omitempty"`
}

type teamsCard struct {
	Schema  string           `json:"$schema"`
	Type    string           `json:"type"`
	Version string           `json:"version"`
	Body    []teamsTextBlock `json:"body"`
}

type teamsAttachment struct {
	ContentType string    `json:"contentType"`
	ContentURL  *string   `json:"contentUrl"`
	Content     teamsCard `json:"content"`
}

// teamsColor is the headline's color for a severity (Adaptive Card colors).
var teamsColor = map[Severity]string{SeverityError: "Attention", SeverityWarning: "Warning", SeverityInfo: "Good"}

func (teams) encode(m message) ([]byte, http.Header, error) {
	color := teamsColor[m.Severity]
	if m.Resolved {
		color = "Good"
	}
	body := []teamsTextBlock{{Type: "TextBlock", Text: teamsEscaper.Replace(m.Headline()), Wrap: true, Weight: "Bolder", Color: color}}
	for _, l := range m.Lines() {
		body = append(body, teamsTextBlock{Type: "TextBlock", Text: teamsEscaper.Replace(l), Wrap: true, FontType: "Monospace", Spacing: "None"})
	}
	b, err := json.Marshal(struct {
		Type        string            `json:"type"`
		Attachments []teamsAttachment `json:"attachments"`
	}{"message", []teamsAttachment{{
		ContentType: "application/vnd.microsoft.card.adaptive",
		Content:     teamsCard{Schema: "http://adaptivecards.io/schemas/adaptive-card.json", Type: "AdaptiveCard", Version: "1.4", Body: body},
	}}})
	return b, http.Header{"Content-Type": {"application/json"}}, err
}
