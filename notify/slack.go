package notify

import (
	"encoding/json"
	"net/http"
	"strings"
)

// slack posts to a Slack incoming webhook: {"text", "blocks"} with the text in mrkdwn. The
// text is gpuctl's, but holds names a team chose (files, jobs, pods): &, < and > are escaped
// as Slack requires (https://api.slack.com/reference/surfaces/formatting#escaping), so that
// no name becomes a mention (<!channel>, <@U…>) or a link; details are in a code block, where
// *, _ and ~ do not format.
type slack struct{}

// slackEscaper escapes Slack's control characters.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// maxSlackText is the most characters of a section block's text (Slack's limit is 3000).
const maxSlackText = 2900

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type slackBlock struct {
	Type string    `json:"type"`
	Text slackText `json:"text"`
}

func (slack) encode(m message) ([]byte, http.Header, error) {
	head := slackEscaper.Replace(m.Headline())
	blocks := []slackBlock{{Type: "section", Text: slackText{Type: "mrkdwn", Text: "*" + strings.ReplaceAll(head, "*", "") + "*"}}}
	if lines := m.Lines(); len(lines) > 0 {
		var b strings.Builder
		for i, l := range lines {
			l = slackEscaper.Replace(strings.ReplaceAll(l, "```", "'''"))
			if b.Len()+len(l) > maxSlackText {
				b.WriteString("…")
				break
			}
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString(l)
		}
		blocks = append(blocks, slackBlock{Type: "section", Text: slackText{Type: "mrkdwn", Text: "```\n" + b.String() + "\n```"}})
	}
	body, err := json.Marshal(struct {
		Text   string       `json:"text"`
		Blocks []slackBlock `json:"blocks"`
	}{head, blocks})
	return body, http.Header{"Content-Type": {"application/json"}}, err
}
