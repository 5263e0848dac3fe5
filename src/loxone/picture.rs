//! Pictures from cameras and intercoms made small enough for an assistant: decode a JPEG,
//! scale it so its long side is at most [`PictureLimits::max_side`] pixels, encode it again as a
//! baseline JPEG. Pure Rust, no system library: `jpeg-decoder` decodes, already scaled by 1/2,
//! 1/4 or 1/8 in the DCT where the target allows (a 12 MP frame never exists at full size in
//! memory), an area average does the rest, `jpeg-encoder` encodes. Chosen by what they add to
//! the binary and to RSS on the Pi (`docs/benchmarks.md`).
//!
//! Nothing of the source survives but its pixels: comments, EXIF (a camera may write its GPS
//! position or serial number there) and ICC data are dropped by the re-encoding. A source that
//! is not a JPEG ([`sniff`]), claims more pixels than [`PictureLimits::max_source_pixels`] or
//! cannot be decoded is a [`PictureError`], never a panic; the size check comes from the
//! header, before any pixel buffer is allocated.

use std::fmt;

/// How small a picture is made, and how large a source may be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PictureLimits {
    /// Longest side of the result in pixels (default 640); a smaller source keeps its size.
    pub max_side: u32,
    /// Largest source accepted, width x height (default 12.6 MP: 4096 x 3072; a 4K camera
    /// frame is 8.3 MP). A baseline JPEG is decoded scaled; a progressive one keeps its
    /// coefficients (6 bytes per pixel) while it is decoded.
    pub max_source_pixels: u64,
    /// JPEG quality of the result, 1-100 (default 80).
    pub quality: u8,
}

impl Default for PictureLimits {
    fn default() -> Self {
        PictureLimits {
            max_side: 640,
            max_source_pixels: 4096 * 3072,
            quality: 80,
        }
    }
}

/// A picture ready to hand out: a baseline JPEG of `width` x `height` pixels.
#[derive(Clone, PartialEq)]
pub struct Picture {
    /// The JPEG bytes (starts with `FF D8`).
    pub jpeg: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// Size of the source picture in pixels.
    pub source_width: u32,
    pub source_height: u32,
}

impl fmt::Debug for Picture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the bytes: pictures are not logged.
        write!(
            f,
            "Picture({}x{} from {}x{}, {} bytes)",
            self.width,
            self.height,
            self.source_width,
            self.source_height,
            self.jpeg.len()
        )
    }
}

/// What a body looks like by its first bytes (never by what the sender claims).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniffed {
    Jpeg,
    Html,
    Png,
    Gif,
    Json,
    Empty,
    Other,
}

impl Sniffed {
    /// Words for error messages: "an HTML page", "a PNG picture", ...
    pub fn describe(self) -> &'static str {
        match self {
            Sniffed::Jpeg => "a JPEG picture",
            Sniffed::Html => "an HTML page",
            Sniffed::Png => "a PNG picture",
            Sniffed::Gif => "a GIF picture",
            Sniffed::Json => "JSON text",
            Sniffed::Empty => "an empty answer",
            Sniffed::Other => "bytes that are not a picture",
        }
    }
}

/// Recognises a body by its magic bytes (leading white space skipped for text).
pub fn sniff(body: &[u8]) -> Sniffed {
    if body.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Sniffed::Jpeg;
    }
    if body.starts_with(b"\x89PNG") {
        return Sniffed::Png;
    }
    if body.starts_with(b"GIF8") {
        return Sniffed::Gif;
    }
    let text = body.trim_ascii_start();
    if text.is_empty() {
        return Sniffed::Empty;
    }
    let head: Vec<u8> = text.iter().take(15).map(u8::to_ascii_lowercase).collect();
    if head.starts_with(b"<!doctype html") || head.starts_with(b"<html") || head.starts_with(b"<") {
        return Sniffed::Html;
    }
    if head.starts_with(b"{") || head.starts_with(b"[") {
        return Sniffed::Json;
    }
    Sniffed::Other
}

/// Why a picture could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PictureError {
    /// The source is something else ([`Sniffed`], never `Jpeg`).
    NotJpeg(Sniffed),
    /// The header announces more pixels than [`PictureLimits::max_source_pixels`].
    TooManyPixels { width: u32, height: u32, max: u64 },
    /// The JPEG is damaged or uses a form the decoder does not read (the decoder's words).
    Undecodable(String),
    /// The scaled picture could not be encoded (the encoder's words).
    Encode(String),
}

impl fmt::Display for PictureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PictureError::NotJpeg(s) => write!(f, "the camera sent {}, not a JPEG", s.describe()),
            PictureError::TooManyPixels { width, height, max } => write!(
                f,
                "the camera's picture is {width}x{height} pixels, more than the {max} accepted"
            ),
            PictureError::Undecodable(m) => write!(f, "the camera's JPEG cannot be decoded: {m}"),
            PictureError::Encode(m) => write!(f, "the scaled picture cannot be encoded: {m}"),
        }
    }
}

impl std::error::Error for PictureError {}

/// Decodes the JPEG `source`, scales it down (area average) so its long side is at most
/// `limits.max_side`, and encodes the result (4:2:0, `limits.quality`). A source already small
/// enough is re-encoded all the same, so no metadata of the camera is passed on.
pub fn scale_jpeg(source: &[u8], limits: &PictureLimits) -> Result<Picture, PictureError> {
    match sniff(source) {
        Sniffed::Jpeg => {}
        other => return Err(PictureError::NotJpeg(other)),
    }
    let mut decoder = jpeg_decoder::Decoder::new(source);
    decoder
        .read_info()
        .map_err(|e| PictureError::Undecodable(e.to_string()))?;
    let info = decoder
        .info()
        .ok_or_else(|| PictureError::Undecodable("no frame header".into()))?;
    let (sw, sh) = (u32::from(info.width), u32::from(info.height));
    if sw == 0 || sh == 0 || u64::from(sw) * u64::from(sh) > limits.max_source_pixels {
        return Err(PictureError::TooManyPixels {
            width: sw,
            height: sh,
            max: limits.max_source_pixels,
        });
    }
    // Decode at the smallest DCT scale (1/8 .. 1/1) that still covers the target size.
    let (tw, th) = fit(sw, sh, limits.max_side.max(1));
    let (dw, dh) = decoder
        .scale(tw as u16, th as u16)
        .map_err(|e| PictureError::Undecodable(e.to_string()))?;
    decoder.set_max_decoding_buffer_size(usize::from(dw) * usize::from(dh) * 4);
    let raw = decoder
        .decode()
        .map_err(|e| PictureError::Undecodable(e.to_string()))?;
    let (w, h) = (usize::from(dw), usize::from(dh));
    let rgb = to_rgb(raw, info.pixel_format, w * h)?;
    let (w32, h32) = (u32::from(dw), u32::from(dh));
    let (nw, nh) = fit(w32, h32, limits.max_side.max(1));
    let small = if (nw, nh) == (w32, h32) {
        rgb
    } else {
        let s = area_average(&rgb, w, h, nw as usize, nh as usize);
        drop(rgb);
        s
    };
    let mut jpeg = Vec::with_capacity(small.len() / 8);
    jpeg_encoder::Encoder::new(&mut jpeg, limits.quality.clamp(1, 100))
        .encode(&small, nw as u16, nh as u16, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| PictureError::Encode(e.to_string()))?;
    Ok(Picture {
        jpeg,
        width: nw,
        height: nh,
        source_width: sw,
        source_height: sh,
    })
}

/// The decoder's pixels as RGB, 3 bytes per pixel: grey (a camera at night) is spread to three
/// channels, 16-bit grey keeps its high byte, CMYK (Adobe's inverted form) is converted.
fn to_rgb(
    raw: Vec<u8>,
    format: jpeg_decoder::PixelFormat,
    pixels: usize,
) -> Result<Vec<u8>, PictureError> {
    use jpeg_decoder::PixelFormat as F;
    let need = pixels * format.pixel_bytes();
    if raw.len() < need {
        return Err(PictureError::Undecodable(format!(
            "{} bytes of pixels for {pixels} pixels",
            raw.len()
        )));
    }
    Ok(match format {
        F::RGB24 => raw,
        F::L8 => raw[..pixels].iter().flat_map(|&v| [v, v, v]).collect(),
        F::L16 => raw[..pixels * 2]
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0]])
            .collect(),
        F::CMYK32 => raw[..pixels * 4]
            .chunks_exact(4)
            .flat_map(|p| {
                let k = u16::from(p[3]);
                let ch = |c: u8| ((u16::from(c) * k) / 255) as u8;
                [ch(p[0]), ch(p[1]), ch(p[2])]
            })
            .collect(),
    })
}

/// The size `w` x `h` scaled so the long side is at most `max_side` (aspect ratio kept, each
/// side at least 1); unchanged when it fits.
pub fn fit(w: u32, h: u32, max_side: u32) -> (u32, u32) {
    let long = w.max(h);
    if long <= max_side {
        return (w, h);
    }
    let scale = |v: u32| {
        ((u64::from(v) * u64::from(max_side) + u64::from(long) / 2) / u64::from(long)).max(1) as u32
    };
    (scale(w), scale(h))
}

/// Shrinks an RGB picture by averaging the source pixels under each target pixel (a box
/// filter: for a downscale it is what a resampling filter would compute, without its ringing).
fn area_average(src: &[u8], w: usize, h: usize, nw: usize, nh: usize) -> Vec<u8> {
    let mut out = vec![0u8; nw * nh * 3];
    for y in 0..nh {
        let (y0, y1) = (y * h / nh, ((y + 1) * h / nh).max(y * h / nh + 1));
        for x in 0..nw {
            let (x0, x1) = (x * w / nw, ((x + 1) * w / nw).max(x * w / nw + 1));
            let mut sum = [0u32; 3];
            for row in src[y0 * w * 3..y1 * w * 3].chunks_exact(w * 3) {
                for p in row[x0 * 3..x1 * 3].chunks_exact(3) {
                    sum[0] += u32::from(p[0]);
                    sum[1] += u32::from(p[1]);
                    sum[2] += u32::from(p[2]);
                }
            }
            let n = ((y1 - y0) * (x1 - x0)) as u32;
            let o = (y * nw + x) * 3;
            for c in 0..3 {
                out[o + c] = ((sum[c] + n / 2) / n) as u8;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg_of(w: u16, h: u16, rgb: [u8; 3]) -> Vec<u8> {
        let px: Vec<u8> = (0..usize::from(w) * usize::from(h))
            .flat_map(|_| rgb)
            .collect();
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, 90)
            .encode(&px, w, h, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        out
    }

    #[test]
    fn scales_the_long_side_and_keeps_the_aspect() {
        let src = jpeg_of(1280, 720, [200, 40, 40]);
        let p = scale_jpeg(&src, &PictureLimits::default()).unwrap();
        assert_eq!((p.width, p.height), (640, 360));
        assert_eq!((p.source_width, p.source_height), (1280, 720));
        let back = scale_jpeg(&p.jpeg, &PictureLimits::default()).unwrap();
        assert_eq!((back.width, back.height), (640, 360));
        let portrait =
            scale_jpeg(&jpeg_of(600, 1000, [0, 0, 0]), &PictureLimits::default()).unwrap();
        assert_eq!((portrait.width, portrait.height), (384, 640));
        let small = scale_jpeg(&jpeg_of(320, 200, [0, 0, 0]), &PictureLimits::default()).unwrap();
        assert_eq!((small.width, small.height), (320, 200));
    }

    #[test]
    fn refuses_what_is_not_a_jpeg_or_too_large() {
        let limits = PictureLimits::default();
        assert_eq!(
            scale_jpeg(b"<!DOCTYPE html><html>login</html>", &limits),
            Err(PictureError::NotJpeg(Sniffed::Html))
        );
        assert_eq!(
            scale_jpeg(b"", &limits),
            Err(PictureError::NotJpeg(Sniffed::Empty))
        );
        assert_eq!(
            scale_jpeg(b"\x89PNG\r\n", &limits),
            Err(PictureError::NotJpeg(Sniffed::Png))
        );
        // A JPEG cut short after its header, and one whose body is noise.
        let good = jpeg_of(64, 64, [1, 2, 3]);
        assert!(matches!(
            scale_jpeg(&good[..40], &limits),
            Err(PictureError::Undecodable(_))
        ));
        let mut noise = good.clone();
        for b in noise.iter_mut().skip(4) {
            *b = 0x5A;
        }
        assert!(scale_jpeg(&noise, &limits).is_err());
        let tight = PictureLimits {
            max_source_pixels: 1000,
            ..limits
        };
        assert_eq!(
            scale_jpeg(&good, &tight),
            Err(PictureError::TooManyPixels {
                width: 64,
                height: 64,
                max: 1000
            })
        );
    }

    #[test]
    fn fit_rounds_and_never_reaches_zero() {
        assert_eq!(fit(1920, 1080, 640), (640, 360));
        assert_eq!(fit(5000, 1, 640), (640, 1));
        assert_eq!(fit(640, 480, 640), (640, 480));
    }
}
