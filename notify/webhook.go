package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
)

// Headers of a generic webhook's request.
const (
	// HeaderEvent is the Event's reason.
	HeaderEvent = "X-Gpuctl-Event"
	// HeaderDelivery is the message's id (a UUID), the same on each retry.
	HeaderDelivery = "X-Gpuctl-Delivery"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the exact body with the
	// provider's key, as GitHub's X-Hub-Signature-256; absent without secretFile.
	HeaderSignature = "X-Gpuctl-Signature"
)

// webhook posts the Event as JSON (WebhookPayload), signed when it has a key. What is signed
// is the body, and only the body: it holds the Event's time and the delivery id, so that a
// receiver can refuse old or repeated deliveries.
type webhook struct {
	secret []byte
}

// WebhookPayload is the body of a generic webhook's request: the Event's fields (with the
// cluster), the delivery id, the text that chat providers show, and the alerts of the
// provider dropped before this one.
type WebhookPayload struct {
	Event
	Delivery string `json:"delivery"`
	// Text is the headline and the detail lines, as Slack and Teams show them (unescaped).
	Text string `json:"text"`
	// DroppedRateLimit and DroppedQueueFull count the alerts dropped before this one.
	DroppedRateLimit int `json:"droppedRateLimit,omitempty"`
	DroppedQueueFull int `json:"droppedQueueFull,omitempty"`
}

func (w webhook) encode(m message) ([]byte, http.Header, error) {
	text := m.Headline()
	for _, l := range m.Lines() {
		text += "\n" + l
	}
	body, err := json.Marshal(WebhookPayload{Event: m.Event, Delivery: m.Delivery, Text: text,
		DroppedRateLimit: m.DroppedRate, DroppedQueueFull: m.DroppedQueue})
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(HeaderEvent, string(m.Reason))
	h.Set(HeaderDelivery, m.Delivery)
	if len(w.secret) > 0 {
		h.Set(HeaderSignature, Signature(w.secret, body))
	}
	return body, h, err
}

// Signature is the value of HeaderSignature for a body: "sha256=" and the hex HMAC-SHA256 of
// the body with key.
func Signature(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
