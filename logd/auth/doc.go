// Package auth is logd's authentication and authorization, without I/O:
// the users file, SASL PLAIN and SCRAM-SHA-256/512 verification, and
// the matching of a user's grants against the topics and groups a
// request names. logd's network server (package logd) drives it.
//
// # Credentials
//
// The server never holds a password. For each SCRAM mechanism a user may
// use, it keeps what RFC 5802 §3 calls the stored credentials: a random
// salt, an iteration count, StoredKey = H(HMAC(SaltedPassword, "Client
// Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"), where
// SaltedPassword = PBKDF2(HMAC-H, password, salt, iterations). As in
// Kafka, the password is not SASLprep-normalized (librdkafka, franz-go
// and Kafka's Java client send it as it is), and iteration counts are
// 4096 to 16384, the range Kafka accepts.
//
// SCRAM conversations run on github.com/xdg-go/scram's server, given
// these stored credentials. A user who does not exist gets decoy
// credentials, so the conversation fails only at the proof, exactly as
// a wrong password does: a client cannot tell which user names exist
// (RFC 5802 §5.1 suggests this). A decoy's salt and keys are derived
// from a secret and the name, the same on every attempt and across
// restarts: Config.DecoySecret (logd keeps one in its data directory),
// else a secret derived from the users' stored keys. Its iteration
// count and salt length are those of one of the users' credentials for
// the mechanism, chosen by the name, so decoys show the counts real
// users have, in the same proportions.
//
// PLAIN (RFC 4616) carries the password itself, so use it only over
// TLS. It is checked against the user's stored SCRAM-SHA-256 credential
// (SCRAM-SHA-512 when there is no SHA-256 one): the offered password is
// salted and hashed with the stored salt and iteration count, and the
// resulting StoredKey is compared with the stored one in constant time.
// An unknown user costs the same PBKDF2 work against a decoy.
//
// An authorization identity (authzid) other than the user's own name is
// refused: nobody may act as somebody else.
//
// # The users file
//
// One JSON document, written by `brokerless logd user add`:
//
//	{
//	  "format": "brokerless-logd-users/1",
//	  "users": [
//	    {
//	      "name": "alice",
//	      "scram": {
//	        "SCRAM-SHA-256": {
//	          "salt": "<base64>",
//	          "iterations": 8192,
//	          "stored_key": "<base64, 32 bytes>",
//	          "server_key": "<base64, 32 bytes>"
//	        }
//	      },
//	      "allow": ["produce:orders.", "consume:orders.", "group:billing-"]
//	    }
//	  ]
//	}
//
// Unknown fields, duplicate users, a name that is empty, longer than 255
// bytes, not UTF-8 or holds a control character, a salt outside 8 to 128
// bytes, keys of the wrong length for their hash and iteration counts
// outside 4096 to 16384 are all refused, naming the user. A user with no
// "scram" entry can authenticate only with a TLS client certificate
// whose subject common name is the user's name. Load refuses a file that
// other users may read or anyone but its owner may write (mode bits
// 0o027), because its hashes allow an offline password search and write
// access would let anyone grant themselves anything.
//
// # Grants
//
// A grant is OPERATION:PREFIX, and it allows the operation on every
// topic (or, for "group", consumer group) whose name starts with PREFIX;
// the prefix "*" means every name. A user is allowed exactly what one of
// their grants allows:
//
//	produce  Produce to the topics; also creates them on first use when
//	         the server auto-creates topics, and lets the user obtain an
//	         idempotent producer id.
//	consume  Fetch and ListOffsets on the topics, and commit or read a
//	         group's offsets for them.
//	group    Use the consumer groups: join, sync, heartbeat, leave,
//	         commit and fetch offsets, describe; list shows only these.
//	admin    Create and delete the topics, and (with any admin grant)
//	         read the broker's configs.
//
// Any grant on a topic lets the user see it in Metadata and read its
// configs; topics the user has no grant on are left out of Metadata, as
// Kafka leaves out topics a principal may not describe.
package auth
