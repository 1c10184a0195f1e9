package oidctest

import (
	"crypto/rand"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// deviceGrant is the device flow's grant type (RFC 8628).
const deviceGrant = "urn:ietf:params:oauth:grant-type:device_code"

// device is a device authorization waiting for the user, then to be redeemed.
type device struct {
	clientID, scope, userCode string
	// user is who approved it (nil while pending).
	user    *User
	expires time.Time
}

// UserCodes yields the user code of each device authorization, as the CLI shows it to its user.
func (i *Issuer) UserCodes() <-chan string { return i.userCodes }

// DeviceRequest is the client id and scope of the last device authorization request.
func (i *Issuer) DeviceRequest() (clientID, scope string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.deviceClient, i.deviceScope
}

// Approve is the signed-in user (SignIn) entering userCode at the verification URI and
// approving it. It reports false when no pending device authorization has that code or nobody
// is signed in.
func (i *Issuer) Approve(userCode string) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	d, ok := i.devices[i.byUserCode[userCode]]
	if !ok || i.user == nil {
		return false
	}
	u := *i.user
	d.user = &u
	return true
}

// device is the device authorization endpoint.
func (i *Issuer) device(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	client, scope := r.PostForm.Get("client_id"), r.PostForm.Get("scope")
	i.mu.Lock()
	i.deviceClient, i.deviceScope = client, scope
	i.mu.Unlock()
	if client != i.clientID {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client_id "+client)
		return
	}
	code, user := rand.Text(), userCode()
	i.mu.Lock()
	i.devices[code] = &device{clientID: client, scope: scope, userCode: user, expires: time.Now().Add(CodeTTL)}
	i.byUserCode[user] = code
	i.mu.Unlock()
	select {
	case i.userCodes <- user:
	default: // nobody reads them
	}
	writeJSON(w, http.StatusOK, map[string]any{"device_code": code, "user_code": user,
		"verification_uri": i.URL + "/activate", "expires_in": int(CodeTTL / time.Second), "interval": 1})
}

// userCode is eight letters as XXXX-XXXX, easy to type.
func userCode() string {
	t := strings.ToUpper(rand.Text())
	return t[:4] + "-" + t[4:8]
}

// redeemDevice answers a device-code grant: pending until approved, then the tokens once.
func (i *Issuer) redeemDevice(client string, f url.Values) (User, string, *oauthErr) {
	i.mu.Lock()
	defer i.mu.Unlock()
	d, ok := i.devices[f.Get("device_code")]
	switch {
	case !ok:
		return User{}, "", &oauthErr{http.StatusBadRequest, "invalid_grant", "unknown or used device code"}
	case d.clientID != client:
		return User{}, "", &oauthErr{http.StatusBadRequest, "invalid_grant", "the device code was issued to another client"}
	case time.Now().After(d.expires):
		return User{}, "", &oauthErr{http.StatusBadRequest, "expired_token", "the device code expired"}
	case d.user == nil:
		return User{}, "", &oauthErr{http.StatusBadRequest, "authorization_pending", "the user has not approved yet"}
	}
	delete(i.devices, f.Get("device_code"))
	delete(i.byUserCode, d.userCode)
	return *d.user, d.scope, nil
}
