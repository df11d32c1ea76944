//! PNG from the SVG plots, for slides and papers: rendered by resvg with a
//! font the binary carries (DejaVu Sans, assets/fonts), so it needs no
//! system fonts and looks the same on every machine.

use resvg::{tiny_skia, usvg};

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Renders an SVG at `scale` × its size (2 for sharp slides).
pub fn render(svg: &str, scale: f32) -> Result<Vec<u8>, String> {
    let mut options = usvg::Options::default();
    {
        let fonts = options.fontdb_mut();
        fonts.load_font_data(FONT.to_vec());
        fonts.set_sans_serif_family("DejaVu Sans");
    }
    options.font_family = "DejaVu Sans".into();
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(scale)
        .ok_or("the plot has no size")?;
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("the plot has no size")?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(scale, scale),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_drawn_with_the_embedded_font() {
        let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="200" height="50">
            <text x="10" y="35" font-family="sans-serif" font-size="30">Triad</text></svg>"#;
        let png = render(svg, 2.0).unwrap();
        let image = tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((image.width(), image.height()), (400, 100));
        let inked = image.pixels().iter().filter(|p| p.red() < 128).count();
        assert!(inked > 500, "the text was not drawn: {inked} dark pixels");
    }
}
