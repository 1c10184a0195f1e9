package registry

import (
	"encoding/base64"
	"encoding/json"
	"errors"
)

// DockerConfigJSON renders c as a docker config.json (the content of a
// kubernetes.io/dockerconfigjson Secret's .dockerconfigjson key) with one auths entry, for host
// (host[:port]). It is what CredentialsFromSecret reads back: a Token is written as the password,
// with Username or "token" as the user name, as Client sends it. It fails for anonymous
// credentials, which have nothing to write.
func DockerConfigJSON(host string, c Credentials) ([]byte, error) {
	user, pass, ok := c.basic()
	if !ok {
		return nil, errors.New("registry credentials: anonymous credentials make no docker config")
	}
	if host == "" {
		return nil, errors.New("registry credentials: no registry host to write a docker config for")
	}
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
}
