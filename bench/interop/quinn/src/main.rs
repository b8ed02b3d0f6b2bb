//! A minimal HTTP/3 origin on quinn 0.11 + h3 0.0.8, for hetquic's interop
//! matrix (bench/interop/matrix.sh --rust): GET /bytes/{n} returns n bytes
//! where byte i is i % 251 (hetquic's origin pattern), anything else 404.
//! It prints "listening" once ready and one line per response: the client
//! address quinn sends to when the response is queued, method, path,
//! status — where the server sends now, which the matrix compares with
//! where PCM-QUIC sent the request.
//!
//! Usage: quinn-h3-origin ADDR CERT.pem KEY.pem

use std::{net::SocketAddr, sync::Arc};

use bytes::Bytes;
use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};

const MAX_BYTES: usize = 64 << 20;
const CHUNK: usize = 64 << 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: quinn-h3-origin ADDR CERT.pem KEY.pem");
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    if let Err(e) = rt.block_on(run(&args[1], &args[2], &args[3])) {
        eprintln!("quinn-h3-origin: {e}");
        std::process::exit(2);
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

async fn run(addr: &str, cert: &str, key: &str) -> Result<(), Error> {
    let addr: SocketAddr = addr.parse().map_err(|e| format!("address {addr:?}: {e}"))?;
    let certs = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{cert}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{cert}: {e}"))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{key}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)?;
    // quinn's default server config allows migration (RFC 9000 §9).
    let endpoint = quinn::Endpoint::server(quinn::ServerConfig::with_crypto(Arc::new(crypto)), addr)?;
    println!("listening");
    while let Some(incoming) = endpoint.accept().await {
        tokio::spawn(async move {
            if let Err(e) = serve(incoming).await {
                eprintln!("connection ended: {e}");
            }
        });
    }
    Ok(())
}

async fn serve(incoming: quinn::Incoming) -> Result<(), Error> {
    let conn = incoming.await?;
    let quic = conn.clone();
    let mut h3 = h3::server::Connection::new(h3_quinn::Connection::new(conn)).await?;
    while let Some(resolver) = h3.accept().await? {
        let (req, mut stream) = resolver.resolve_request().await?;
        let size = req
            .uri()
            .path()
            .strip_prefix("/bytes/")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n <= MAX_BYTES && req.method() == http::Method::GET);
        let status = if size.is_some() { 200 } else { 404 };
        println!("{} {} {} {}", quic.remote_address(), req.method(), req.uri().path(), status);
        let mut head = http::Response::builder().status(status);
        if let Some(n) = size {
            head = head.header("content-length", n);
        }
        stream.send_response(head.body(())?).await?;
        let mut off = 0;
        while off < size.unwrap_or(0) {
            let end = (off + CHUNK).min(size.unwrap_or(0));
            stream.send_data(Bytes::from((off..end).map(|i| (i % 251) as u8).collect::<Vec<u8>>())).await?;
            off = end;
        }
        stream.finish().await?;
    }
    Ok(())
}
