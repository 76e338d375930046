// Package message makes messages fit where they go. The API server
// refuses an event whose note is over 1024 bytes ("Server rejected event
// (will not retry!)": the event is lost) and a condition whose message is
// over 32768 characters (the whole status write fails). A long message —
// a list of collisions, of API warnings, a render error — is therefore cut
// to its limit with a note of how much was left out ("… (1234 more
// characters)"), never dropped, and the full text goes to the manager's
// log.
//
// Cut does the cutting; Recorder wraps an event recorder once, where the
// manager builds it, so that every event it records fits; SetCondition
// sets a status condition whose message fits.
package message
