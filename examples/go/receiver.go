// A Sensor Cloud push receiver in Go, standard library only: HS256 is a few lines of crypto/hmac, so no JWT
// module is needed. It verifies X-Service-Signature exactly as the receiver kit does: HS256 only, exp and iat with
// a clock skew, and the SHA-256 of the raw body against the checksum_sha256 claim, in constant time. While you roll
// the connector's secret over, set PREVIOUS_SIGNATURE_SECRET to the old one: a push is accepted when
// X-Service-Signature or X-Service-Signature-Previous verifies with either secret.
//
//	SIGNATURE_SECRET=s3cret PORT=3000 go run examples/go/receiver.go
//	# HTTPS, as a data connector needs: also set CERT_FILE and KEY_FILE (PEM)
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

const signatureHeader = "X-Service-Signature"

// During a secret rotation's overlap: the same claims signed with the connector's previous secret.
const previousSignatureHeader = "X-Service-Signature-Previous"

// SignatureError says why a push was refused; Reason uses the receiver kit's codes.
type SignatureError struct {
	Reason  string
	Message string
}

func (e *SignatureError) Error() string { return e.Reason + ": " + e.Message }

// Claims of a verified signature.
type Claims struct {
	Checksum       string   `json:"checksum"`
	ChecksumSHA256 *string  `json:"checksum_sha256"`
	Iat            *float64 `json:"iat"`
	Exp            *float64 `json:"exp"`
	Jti            string   `json:"jti"`
}

// VerifySignature checks the header value (net/http matches the header name in any case) against the raw body.
func VerifySignature(rawBody []byte, token string, secret []byte, maxAge time.Duration, skew time.Duration, now time.Time) (*Claims, error) {
	if token == "" {
		return nil, &SignatureError{"missing_header", "no " + signatureHeader + " header"}
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, &SignatureError{"malformed", signatureHeader + " is not a JWT"}
	}
	headerJSON, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	payloadJSON, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	signature, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	var header struct {
		Alg string `json:"alg"`
	}
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(headerJSON, &header) != nil {
		return nil, &SignatureError{"malformed", signatureHeader + " is not a JWT"}
	}
	// The algorithm is ours to choose, never the token's: alg none, HS512, RS256 ... are refused.
	if header.Alg != "HS256" {
		return nil, &SignatureError{"algorithm", fmt.Sprintf("alg %q refused; only HS256 is accepted", header.Alg)}
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(parts[0] + "." + parts[1]))
	if !hmac.Equal(mac.Sum(nil), signature) {
		return nil, &SignatureError{"signature", "the signature does not match: wrong secret, or a changed token"}
	}
	var claims Claims
	if json.Unmarshal(payloadJSON, &claims) != nil {
		return nil, &SignatureError{"malformed", "the claims are not a JSON object"}
	}
	nowSeconds := float64(now.UnixNano()) / 1e9
	if claims.Exp == nil || *claims.Exp <= nowSeconds-skew.Seconds() {
		return nil, &SignatureError{"expired", "the signature has expired"}
	}
	if claims.Iat == nil || *claims.Iat > nowSeconds+skew.Seconds() {
		return nil, &SignatureError{"issued_at", "iat is missing or in the future"}
	}
	if maxAge > 0 && nowSeconds-*claims.Iat > (maxAge+skew).Seconds() {
		return nil, &SignatureError{"too_old", "the signature is older than " + maxAge.String()}
	}
	if claims.ChecksumSHA256 == nil {
		return nil, &SignatureError{"missing_checksum", "the signature carries no checksum_sha256"}
	}
	expected, err := hex.DecodeString(*claims.ChecksumSHA256)
	actual := sha256.Sum256(rawBody)
	if err != nil || !hmac.Equal(actual[:], expected) {
		return nil, &SignatureError{"checksum_mismatch", "the body is not the one that was signed"}
	}
	return &claims, nil
}

// VerifyPush checks a push against the receiver's secrets (the connector's, and the old one too while you roll it
// over): X-Service-Signature, then X-Service-Signature-Previous when the push carries it. The push is accepted when
// either verifies with any of the secrets.
func VerifyPush(rawBody []byte, header http.Header, secrets [][]byte, maxAge time.Duration, skew time.Duration, now time.Time) (*Claims, error) {
	tokens := []string{header.Get(signatureHeader)}
	if tokens[0] == "" {
		return nil, &SignatureError{"missing_header", "no " + signatureHeader + " header"}
	}
	if previous := header.Get(previousSignatureHeader); previous != "" {
		tokens = append(tokens, previous)
	}
	var refusal *SignatureError
	for _, token := range tokens {
		for _, secret := range secrets {
			claims, err := VerifySignature(rawBody, token, secret, maxAge, skew, now)
			if err == nil {
				return claims, nil
			}
			// The most telling refusal: a changed body or an expired token says more than a secret that does not match.
			if e := err.(*SignatureError); refusal == nil || (refusal.Reason == "signature" && e.Reason != "signature") {
				refusal = e
			}
		}
	}
	if refusal == nil {
		return nil, &SignatureError{"signature", "no signature secret to verify with"}
	}
	return nil, refusal
}

// deduplicator remembers event ids for a while (delivery is at least once), bounded in entries.
type deduplicator struct {
	mu     sync.Mutex
	expiry map[string]time.Time
	order  []string
	max    int
	ttl    time.Duration
}

func (d *deduplicator) firstSeen(id string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.expiry[id]; ok && t.After(now) {
		return false
	}
	d.expiry[id] = now.Add(d.ttl)
	d.order = append(d.order, id)
	for len(d.order) > 0 && (len(d.expiry) > d.max || !d.expiry[d.order[0]].After(now)) {
		delete(d.expiry, d.order[0])
		d.order = d.order[1:]
	}
	return true
}

type push struct {
	Event struct {
		EventID   string `json:"eventId"`
		EventType string `json:"eventType"`
	} `json:"event"`
	Labels   map[string]string `json:"labels"`
	Metadata struct {
		DeviceID string `json:"deviceId"`
	} `json:"metadata"`
}

func main() {
	secret := os.Getenv("SIGNATURE_SECRET")
	if secret == "" {
		fmt.Fprintln(os.Stderr, "set SIGNATURE_SECRET to the data connector's signature secret")
		os.Exit(2)
	}
	secrets := [][]byte{[]byte(secret)}
	if previous := os.Getenv("PREVIOUS_SIGNATURE_SECRET"); previous != "" {
		secrets = append(secrets, []byte(previous))
	}
	dedup := &deduplicator{expiry: map[string]time.Time{}, max: 100000, ttl: 13 * time.Hour}
	http.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if _, err := VerifyPush(raw, r.Header, secrets, time.Hour, time.Minute, time.Now()); err != nil {
			reason := err.(*SignatureError).Reason
			fmt.Printf("rejected: %s (%s)\n", reason, err)
			http.Error(w, reason, http.StatusBadRequest)
			return
		}
		var p push
		if err := json.Unmarshal(raw, &p); err != nil {
			http.Error(w, "not a push body", http.StatusBadRequest)
			return
		}
		if !dedup.firstSeen(p.Event.EventID, time.Now()) {
			fmt.Printf("duplicate %s\n", p.Event.EventID)
			w.WriteHeader(http.StatusOK)
			return
		}
		// Acknowledge at once; queue slow work (the service waits at most 10 s).
		w.WriteHeader(http.StatusOK)
		labels, _ := json.Marshal(p.Labels)
		fmt.Printf("verified %s %s from %s %s\n", p.Event.EventID, p.Event.EventType, p.Metadata.DeviceID, labels)
	})
	host := os.Getenv("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	listener, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		log.Fatal(err)
	}
	scheme := "http"
	if os.Getenv("CERT_FILE") != "" {
		scheme = "https"
	}
	fmt.Printf("listening on %s://%s/hook\n", scheme, listener.Addr())
	if scheme == "https" {
		log.Fatal(http.ServeTLS(listener, nil, os.Getenv("CERT_FILE"), os.Getenv("KEY_FILE")))
	}
	log.Fatal(http.Serve(listener, nil))
}
