// Package smtptest runs a real SMTP server (emersion/go-smtp) on 127.0.0.1 for tests of code
// that sends mail: STARTTLS under a certificate made for the test, AUTH PLAIN only after
// STARTTLS, mail only after AUTH, and every accepted message kept for the test to read.
// It is for tests only.
package smtptest
