// Set-up shared by the ns-3 benchmarks (transfer.cc, lossregime.cc): the
// TCP socket defaults and the point-to-point link that hetquic's side of
// each comparison models.
#pragma once

#include "ns3/core-module.h"
#include "ns3/point-to-point-module.h"

#include <string>

namespace bench {

// ConfigureTcp makes tcp (an ns-3 TCP type without "ns3::", e.g.
// TcpNewReno) the socket type, with 1448-byte segments (hetquic's payload
// per packet) and 16 MiB buffers, so that neither side's window is capped.
inline void ConfigureTcp(const std::string& tcp) {
  using namespace ns3;
  Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::" + tcp));
  Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1448));
  Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(16 << 20));
  Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(16 << 20));
}

// Link is the benchmarks' link: 10 Mbit/s, 20 ms one way, a 100-packet
// drop-tail queue on each device (callers uninstall the queue disc that
// address assignment adds).
inline ns3::PointToPointHelper Link() {
  using namespace ns3;
  PointToPointHelper p2p;
  p2p.SetDeviceAttribute("DataRate", StringValue("10Mbps"));
  p2p.SetChannelAttribute("Delay", StringValue("20ms"));
  p2p.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("100p"));
  return p2p;
}

}  // namespace bench
