package wire

import (
	"fmt"
	"io"
	"net/http"
)

// ReadPush reads a push stream's head: a 200 response carrying the
// absolute http:// URL it is for in Ct-Push-Url (removed from the header).
func ReadPush(r io.Reader) (string, *http.Response, error) {
	resp, err := NewHeadReader(r).ReadResponse(nil)
	if err != nil {
		return "", nil, err
	}
	u := resp.Header.Get(HdrPushURL)
	resp.Header.Del(HdrPushURL)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return "", nil, fmt.Errorf("push of %q: status %d", u, resp.StatusCode)
	}
	if _, err := UpstreamOf(u); err != nil {
		resp.Body.Close()
		return "", nil, fmt.Errorf("push %s %q: %w", HdrPushURL, u, err)
	}
	return u, resp, nil
}
