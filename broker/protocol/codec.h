// Encode / Decode of broker messages (messages.h), both walking
// Message::Fields. Decode takes untrusted bytes: every length and count is
// bounded, every enum and flag checked (Message::Valid, Ip::Valid), and
// trailing bytes refuse the message.
#ifndef BROKER_PROTOCOL_CODEC_H_
#define BROKER_PROTOCOL_CODEC_H_

#include <string>
#include <string_view>

#include "broker/protocol/messages.h"

namespace sandbox::broker {

// The record for `m` (header and fields). A string field longer than its
// bound is cut to it, so the result always decodes.
std::string Encode(const Message& m);

// Parses one record. False (and *m unspecified) for anything not exactly
// one valid message: a bad version, type, flags or field, a string over its
// bound, an address of the wrong family shape, trailing bytes.
bool Decode(std::string_view record, Message* m);

// Text for logs: "127.0.0.1", "::1" (inet_ntop), and "127.0.0.1:80",
// "[::1]:80".
std::string IpToString(const Ip& ip);
std::string EndpointToString(const Endpoint& e);

}  // namespace sandbox::broker

#endif  // BROKER_PROTOCOL_CODEC_H_
