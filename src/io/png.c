/* PNG maps: water depth (hill-shaded bed in grey, water in a blue colour map blended over it) or
 * any scalar field (viridis colour map), with a colour bar with labels on the right and a title;
 * and line plots of time series (gauges) in stacked panels with axes, ticks and legends. Text is
 * drawn with a built-in 5x7 bitmap font and images are written with libpng's simplified API. On
 * maps north (row j = 0 at the bottom) is up. */
#include "tessera/io.h"

#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

enum {
  MIN_WIDTH_UNSCALED = 400, /* grids at least this wide get one pixel per cell */
  TARGET_WIDTH = 600,       /* smaller grids are scaled up to at least this width */
  TEXT_SCALE = 2,
  GLYPH_W = 5,
  GLYPH_H = 7,
  GLYPH_ADVANCE = (GLYPH_W + 1) * TEXT_SCALE,
  MARGIN = 10,
  BAR_WIDTH = 20,
  MIN_BAR_HEIGHT = 150,
  LABEL_CHARS = 9, /* room reserved for a colour bar label */
  BAR_PANEL_WIDTH = BAR_WIDTH + 8 + LABEL_CHARS * GLYPH_ADVANCE, /* colour bar and its labels */
  BAR_HEADER = GLYPH_H * TEXT_SCALE + 2 * MARGIN, /* room for a text line above a colour bar */
  MAX_MAP_SIZE = 20000                            /* pixels along either side of a map */
};

static const double WATER_ALPHA = 0.85;

/* One 5x7 glyph: 7 rows, bit 4 is the leftmost pixel. */
typedef struct glyph {
  char c;
  unsigned char rows[GLYPH_H];
} glyph;

static const glyph font[] = {
    {'0', {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}},
    {'1', {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'2', {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}},
    {'3', {0x1e, 0x01, 0x01, 0x0e, 0x01, 0x01, 0x1e}},
    {'4', {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}},
    {'5', {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}},
    {'6', {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}},
    {'7', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}},
    {'9', {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}},
    {'A', {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
    {'B', {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}},
    {'C', {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}},
    {'D', {0x1c, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1c}},
    {'E', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}},
    {'F', {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}},
    {'G', {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}},
    {'H', {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}},
    {'I', {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}},
    {'M', {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'P', {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}},
    {'Q', {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}},
    {'R', {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}},
    {'S', {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}},
    {'T', {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}},
    {'X', {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}},
    {'Z', {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}},
    {'a', {0x00, 0x00, 0x0e, 0x01, 0x0f, 0x11, 0x0f}},
    {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1e}},
    {'c', {0x00, 0x00, 0x0e, 0x10, 0x10, 0x11, 0x0e}},
    {'d', {0x01, 0x01, 0x0d, 0x13, 0x11, 0x11, 0x0f}},
    {'e', {0x00, 0x00, 0x0e, 0x11, 0x1f, 0x10, 0x0e}},
    {'f', {0x06, 0x09, 0x08, 0x1c, 0x08, 0x08, 0x08}},
    {'g', {0x00, 0x0f, 0x11, 0x11, 0x0f, 0x01, 0x0e}},
    {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0c, 0x04, 0x04, 0x04, 0x0e}},
    {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0c}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}},
    {'l', {0x0c, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}},
    {'m', {0x00, 0x00, 0x1a, 0x15, 0x15, 0x11, 0x11}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0e, 0x11, 0x11, 0x11, 0x0e}},
    {'p', {0x00, 0x00, 0x1e, 0x11, 0x1e, 0x10, 0x10}},
    {'q', {0x00, 0x00, 0x0d, 0x13, 0x0f, 0x01, 0x01}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0e, 0x10, 0x0e, 0x01, 0x1e}},
    {'t', {0x08, 0x08, 0x1c, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0d}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0a, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0a}},
    {'x', {0x00, 0x00, 0x11, 0x0a, 0x04, 0x0a, 0x11}},
    {'y', {0x00, 0x00, 0x11, 0x11, 0x0f, 0x01, 0x0e}},
    {'z', {0x00, 0x00, 0x1f, 0x02, 0x04, 0x08, 0x1f}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}},
    {'=', {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}},
    {'-', {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}},
    {':', {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {',', {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {'|', {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
};

typedef struct image {
  int width, height;
  unsigned char *rgb;
} image;

typedef struct colour {
  unsigned char r, g, b;
} colour;

static const colour white = {255, 255, 255}, black = {0, 0, 0};
static const colour no_data = {232, 232, 232}; /* inactive cells and NaN values */

static void put_pixel(image *im, int x, int y, colour c) {
  if (x < 0 || y < 0 || x >= im->width || y >= im->height)
    return;
  unsigned char *p = im->rgb + 3 * ((size_t)y * im->width + x);
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

static void fill_rect(image *im, int x0, int y0, int w, int h, colour c) {
  for (int y = y0; y < y0 + h; y++)
    for (int x = x0; x < x0 + w; x++)
      put_pixel(im, x, y, c);
}

static const glyph *find_glyph(char c) {
  for (size_t k = 0; k < sizeof font / sizeof font[0]; k++)
    if (font[k].c == c)
      return &font[k];
  return NULL;
}

static int text_width(const char *text) { return (int)strlen(text) * GLYPH_ADVANCE; }

/* Draws the glyphs of text, characters without a glyph blank: left to right with the top-left
 * corner at (x, y), or (up) rotated a quarter turn anticlockwise, read upwards, with the
 * bottom-left corner of the first character at (x, y). */
static void draw_glyphs(image *im, int x, int y, const char *text, colour c, int up) {
  for (; *text; text++, x += up ? 0 : GLYPH_ADVANCE, y -= up ? GLYPH_ADVANCE : 0) {
    const glyph *g = find_glyph(*text);
    if (!g)
      continue;
    for (int row = 0; row < GLYPH_H; row++)
      for (int col = 0; col < GLYPH_W; col++)
        if (g->rows[row] & (1u << (GLYPH_W - 1 - col)))
          fill_rect(im, up ? x + row * TEXT_SCALE : x + col * TEXT_SCALE,
                    up ? y - (col + 1) * TEXT_SCALE : y + row * TEXT_SCALE, TEXT_SCALE, TEXT_SCALE,
                    c);
  }
}

/* Draws text with its top-left corner at (x, y). */
static void draw_text(image *im, int x, int y, const char *text, colour c) {
  draw_glyphs(im, x, y, text, c, 0);
}

static colour mix(colour a, colour b, double t) {
  colour m = {(unsigned char)lround(a.r + (b.r - a.r) * t),
              (unsigned char)lround(a.g + (b.g - a.g) * t),
              (unsigned char)lround(a.b + (b.b - a.b) * t)};
  return m;
}

/* A colour map: the colour of t in 0..1. */
typedef colour (*colour_map)(double t);

/* Linear interpolation between n >= 2 evenly spaced colour stops over 0..1 (t clamped). */
static colour ramp(const colour *stops, int n, double t) {
  t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
  double s = t * (n - 1);
  int k = s < n - 1 ? (int)s : n - 2;
  return mix(stops[k], stops[k + 1], s - k);
}

/* Blue colour map over 0..1: light cyan, mid blue, dark blue. */
static colour depth_colour(double t) {
  static const colour stops[3] = {{190, 245, 255}, {40, 130, 230}, {5, 20, 110}};
  return ramp(stops, 3, t);
}

/* Matplotlib's perceptually uniform viridis map over 0..1 (dark blue, green, yellow), sampled
 * at 17 points (within 6/255 of the 256-entry table). */
static colour viridis(double t) {
  static const colour stops[17] = {{68, 1, 84},    {72, 24, 106},  {71, 45, 123},  {66, 64, 134},
                                   {59, 82, 139},  {51, 99, 141},  {44, 114, 142}, {38, 129, 142},
                                   {33, 144, 140}, {31, 159, 136}, {40, 174, 128}, {62, 188, 116},
                                   {93, 201, 99},  {130, 211, 76}, {171, 220, 50}, {213, 226, 26},
                                   {253, 231, 37}};
  return ramp(stops, 17, t);
}

/* Bed slope along one axis by central differences, one-sided next to edges or inactive cells. */
static double bed_slope(const double *bed, size_t here, size_t before, size_t after, int has_before,
                        int has_after, double cellsize) {
  has_before = has_before && !isnan(bed[before]);
  has_after = has_after && !isnan(bed[after]);
  if (has_before && has_after)
    return (bed[after] - bed[before]) / (2.0 * cellsize);
  if (has_after)
    return (bed[after] - bed[here]) / cellsize;
  if (has_before)
    return (bed[here] - bed[before]) / cellsize;
  return 0.0;
}

/* Grey hill shade of cell (i, j), lit from the north-west at 45 degrees above the horizon. */
static colour hill_shade(const ts_raster *geom, const double *bed, int i, int j) {
  int nx = geom->ncols, ny = geom->nrows;
  size_t c = (size_t)i + (size_t)j * nx;
  double dzdx = bed_slope(bed, c, c - 1, c + 1, i > 0, i < nx - 1, geom->cellsize);
  double dzdy = bed_slope(bed, c, c - nx, c + nx, j > 0, j < ny - 1, geom->cellsize);
  double norm = sqrt(dzdx * dzdx + dzdy * dzdy + 1.0);
  const double light_x = -0.5, light_y = 0.5, light_z = sqrt(0.5); /* north-west, 45 deg */
  double lit = (-dzdx * light_x - dzdy * light_y + light_z) / norm;
  lit = lit < 0.0 ? 0.0 : lit;
  unsigned char grey = (unsigned char)lround(40.0 + 170.0 * lit);
  colour shade = {grey, grey, grey};
  return shade;
}

static colour cell_colour(const ts_raster *geom, const double *bed, const double *depth,
                          double dry_depth, double depth_max, int i, int j) {
  size_t c = (size_t)i + (size_t)j * geom->ncols;
  if (isnan(bed[c]))
    return no_data;
  colour shade = hill_shade(geom, bed, i, j);
  if (!(depth[c] > dry_depth))
    return shade;
  return mix(shade, depth_colour(depth[c] / depth_max), WATER_ALPHA);
}

/* A white image with a map of nx x ny cells at `scale` pixels per cell in its top-left corner
 * (row j = 0 at the bottom) and, on its right, a panel `panel_width` pixels wide holding a colour
 * bar with `header` pixels kept free above it. */
typedef struct map_image {
  image im;
  int ny, scale;
  int bar_x, bar_y, bar_height;
} map_image;

static ts_status map_image_create(map_image *m, const char *path, int nx, int ny, int scale,
                                  int panel_width, int header) {
  if ((long long)nx * scale > MAX_MAP_SIZE || (long long)ny * scale > MAX_MAP_SIZE)
    return ts_error(TS_ERR_INPUT, "%s: grid of %d x %d cells is too large for a PNG map", path, nx,
                    ny);
  int map_w = nx * scale, map_h = ny * scale;
  int min_height = MIN_BAR_HEIGHT + 4 * MARGIN + header;
  m->ny = ny;
  m->scale = scale;
  m->bar_x = map_w + MARGIN + 2;
  m->bar_height = map_h * 6 / 10 > MIN_BAR_HEIGHT ? map_h * 6 / 10 : MIN_BAR_HEIGHT;
  m->im.width = m->bar_x + panel_width + MARGIN;
  m->im.height = map_h > min_height ? map_h : min_height;
  m->bar_y = header + (m->im.height - header - m->bar_height) / 2;
  m->im.rgb = malloc((size_t)m->im.width * m->im.height * 3);
  if (!m->im.rgb)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory for a %d x %d image", path, m->im.width,
                    m->im.height);
  fill_rect(&m->im, 0, 0, m->im.width, m->im.height, white);
  return TS_OK;
}

static void fill_cell(map_image *m, int i, int j, colour c) {
  fill_rect(&m->im, i * m->scale, (m->ny - 1 - j) * m->scale, m->scale, m->scale, c);
}

/* Colour bar of `map` from vmin at the bottom to vmax at the top, framed, with nticks >= 2
 * evenly spaced ticks labelled with their value followed by `units`. */
static void draw_colour_bar(map_image *m, colour_map map, double vmin, double vmax, int nticks,
                            const char *units) {
  image *im = &m->im;
  int x0 = m->bar_x, y0 = m->bar_y, height = m->bar_height;
  for (int y = 0; y < height; y++) {
    colour c = map(1.0 - (double)y / (height - 1));
    fill_rect(im, x0, y0 + y, BAR_WIDTH, 1, c);
  }
  fill_rect(im, x0 - 1, y0 - 1, BAR_WIDTH + 2, 1, black);
  fill_rect(im, x0 - 1, y0 + height, BAR_WIDTH + 2, 1, black);
  fill_rect(im, x0 - 1, y0 - 1, 1, height + 2, black);
  fill_rect(im, x0 + BAR_WIDTH, y0 - 1, 1, height + 2, black);
  for (int tick = 0; tick < nticks; tick++) {
    double value = vmin + (vmax - vmin) * tick / (nticks - 1);
    int y = y0 + (int)lround((height - 1) * (1.0 - (double)tick / (nticks - 1)));
    char label[32];
    snprintf(label, sizeof label, "%.3g%s", value, units);
    fill_rect(im, x0 + BAR_WIDTH, y, 5, 1, black);
    draw_text(im, x0 + BAR_WIDTH + 8, y - GLYPH_H * TEXT_SCALE / 2, label, black);
  }
}

static void draw_title(image *im, const char *title) {
  if (!title || !*title)
    return;
  int pad = 4;
  fill_rect(im, MARGIN - pad, MARGIN - pad, text_width(title) + 2 * pad - TEXT_SCALE,
            GLYPH_H * TEXT_SCALE + 2 * pad, white);
  draw_text(im, MARGIN, MARGIN, title, black);
}

/* Writes the image as an RGB PNG through a temporary file and frees its pixels. */
static ts_status write_png(const char *path, image *im) {
  char tmp_path[4096];
  FILE *f = ts_open_temp(path, tmp_path, sizeof tmp_path);
  if (!f) {
    free(im->rgb);
    return TS_ERR_IO;
  }
  png_image png;
  memset(&png, 0, sizeof png);
  png.version = PNG_IMAGE_VERSION;
  png.width = (png_uint_32)im->width;
  png.height = (png_uint_32)im->height;
  png.format = PNG_FORMAT_RGB;
  int written = png_image_write_to_stdio(&png, f, 0, im->rgb, 0, NULL);
  free(im->rgb);
  if (!written) {
    ts_status status = ts_error(TS_ERR_IO, "%s: cannot write PNG: %s", path, png.message);
    fclose(f);
    remove(tmp_path);
    png_image_free(&png);
    return status;
  }
  return ts_commit_temp(f, tmp_path, path);
}

ts_status ts_png_write_depth(const char *path, const ts_raster *geom, const double *bed,
                             const double *depth, double dry_depth, double depth_max,
                             const char *title) {
  int nx = geom->ncols, ny = geom->nrows;
  if (!(depth_max > 0.0) || !isfinite(depth_max))
    return ts_error(TS_ERR_INPUT, "%s: depth_max %g must be positive", path, depth_max);
  int scale = nx >= MIN_WIDTH_UNSCALED ? 1 : (TARGET_WIDTH + nx - 1) / nx;
  map_image m;
  TS_CALL(map_image_create(&m, path, nx, ny, scale, BAR_PANEL_WIDTH, 0));
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++)
      fill_cell(&m, i, j, cell_colour(geom, bed, depth, dry_depth, depth_max, i, j));
  draw_colour_bar(&m, depth_colour, 0.0, depth_max, 3, " m");
  draw_title(&m.im, title);
  return write_png(path, &m.im);
}

ts_status ts_png_write_field(const char *path, int nx, int ny, const double *values, double vmin,
                             double vmax, int scale, const char *label, const char *title) {
  if (nx < 1 || ny < 1 || scale < 1)
    return ts_error(TS_ERR_INPUT,
                    "%s: a map of %d x %d cells at %d pixels per cell: all must be positive", path,
                    nx, ny, scale);
  if (!isfinite(vmin) || !isfinite(vmax) || !(vmax > vmin))
    return ts_error(TS_ERR_INPUT, "%s: colour range %g .. %g must be finite and increasing", path,
                    vmin, vmax);
  int has_label = label && *label;
  int panel_width = BAR_PANEL_WIDTH;
  if (has_label && text_width(label) > panel_width)
    panel_width = text_width(label);
  map_image m;
  TS_CALL(map_image_create(&m, path, nx, ny, scale, panel_width, has_label ? BAR_HEADER : 0));
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double v = values[(size_t)i + (size_t)j * nx];
      fill_cell(&m, i, j, isnan(v) ? no_data : viridis((v - vmin) / (vmax - vmin)));
    }
  draw_colour_bar(&m, viridis, vmin, vmax, 2, "");
  if (has_label)
    draw_text(&m.im, m.bar_x, m.bar_y - BAR_HEADER, label, black);
  draw_title(&m.im, title);
  return write_png(path, &m.im);
}

/* Time series plots. The image is PLOT_WIDTH wide: an overall title, one PLOT_PANEL_HEIGHT panel
 * per ts_plot_panel, and the time axis label. In a panel, the frame starts FRAME_TOP below its
 * top (room for its title) and ends FRAME_BOTTOM above its bottom (room for the time ticks);
 * data are drawn inside the frame, the legend to its right. */
enum {
  PLOT_WIDTH = 1200,
  PLOT_PANEL_HEIGHT = 400,
  LINE_HEIGHT = GLYPH_H * TEXT_SCALE,
  PLOT_HEADER = LINE_HEIGHT + 2 * MARGIN, /* title above the panels, time label below them */
  FRAME_TOP = LINE_HEIGHT + 14,
  FRAME_BOTTOM = 36,
  PLOT_AREA_HEIGHT = PLOT_PANEL_HEIGHT - FRAME_TOP - FRAME_BOTTOM - 1, /* inside the frame */
  MAX_PLOT_PANELS = (MAX_MAP_SIZE - 2 * PLOT_HEADER) / PLOT_PANEL_HEIGHT,
  TICK_LENGTH = 5,
  TICK_LABEL_GAP = 4, /* between a tick and its label */
  Y_LABEL_GAP = 10,   /* between the y label and the tick labels */
  TITLE_GAP = 8,      /* between a panel's title and its frame */
  LINE_WIDTH = 2,
  MARKER_SIZE = 6, /* square drawn at a point without finite neighbours */
  MIN_TICKS = 4,
  MAX_TICKS = 6,
  LEGEND_SWATCH = 32,    /* length of the line sample before a legend label */
  LEGEND_LABEL_GAP = 10, /* between the line sample and the label */
  LEGEND_ROW = LINE_HEIGHT + 6,
  LEGEND_GAP = 16,        /* between the frame and the legend, and between legend columns */
  LEGEND_MIN_CHARS = 8,   /* a legend column is at least this many characters wide */
  LEGEND_MAX_CHARS = 16,  /* longer labels are cut */
  LEGEND_MAX_WIDTH = 480, /* the legend takes at most this much of the width */
  LEGEND_ROWS = PLOT_AREA_HEIGHT / LEGEND_ROW
};

static const colour grid_grey = {225, 225, 225};

/* Matplotlib's qualitative tab10 palette: series k takes colour k % 10. */
static const colour series_colours[10] = {
    {31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
    {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

/* A dash pattern along a line, in pixel steps: `on[0]` drawn, `off[0]` skipped, `on[1]` drawn,
 * `off[1]` skipped, repeated. Series k takes pattern (k / 10) % 4, so that series sharing a
 * colour differ in their pattern. */
typedef struct dash {
  int on[2], off[2];
} dash;

static const dash dashes[4] = {
    {{1, 0}, {0, 0}},  /* solid */
    {{12, 0}, {6, 0}}, /* dashed */
    {{3, 0}, {4, 0}},  /* dotted */
    {{12, 3}, {5, 5}}, /* dash-dotted */
};

static int dash_on(const dash *d, long step) {
  long period = d->on[0] + d->off[0] + d->on[1] + d->off[1];
  long s = step % period;
  return s < d->on[0] || (s >= d->on[0] + d->off[0] && s < d->on[0] + d->off[0] + d->on[1]);
}

/* A rectangle of pixels: columns x .. x + w - 1, rows y .. y + h - 1. */
typedef struct rect {
  int x, y, w, h;
} rect;

/* Draws lines LINE_WIDTH pixels wide in one colour and dash pattern, clipped to `clip`. `step`
 * counts the pixels along the path, so that dashes run on across joined lines; a line starting
 * where the last one ended does not count its first pixel again. */
typedef struct pen {
  image *im;
  rect clip;
  colour c;
  const dash *pattern;
  long step;
  int drawn, last_x, last_y; /* the last pixel on the path, once there is one */
} pen;

static void pen_square(pen *p, int x0, int y0, int size) {
  for (int y = y0; y < y0 + size; y++)
    for (int x = x0; x < x0 + size; x++)
      if (x >= p->clip.x && x < p->clip.x + p->clip.w && y >= p->clip.y &&
          y < p->clip.y + p->clip.h)
        put_pixel(p->im, x, y, p->c);
}

static void pen_pixel(pen *p, int x, int y) {
  if (p->drawn && x == p->last_x && y == p->last_y)
    return;
  if (dash_on(p->pattern, p->step++))
    pen_square(p, x, y, LINE_WIDTH);
  p->drawn = 1;
  p->last_x = x;
  p->last_y = y;
}

/* Bresenham's line from (xa, ya) to (xb, yb), both ends included. */
static void pen_line(pen *p, int xa, int ya, int xb, int yb) {
  int dx = abs(xb - xa), dy = -abs(yb - ya);
  int sx = xa < xb ? 1 : -1, sy = ya < yb ? 1 : -1;
  int err = dx + dy;
  for (;;) {
    pen_pixel(p, xa, ya);
    if (xa == xb && ya == yb)
      return;
    int e2 = 2 * err;
    if (e2 >= dy) {
      err += dy;
      xa += sx;
    }
    if (e2 <= dx) {
      err += dx;
      ya += sy;
    }
  }
}

/* An axis from lo to hi with `nticks` ticks at (k0 + i) * step, i = 0 .. nticks - 1. */
typedef struct axis {
  double lo, hi, step, k0;
  int nticks;
} axis;

/* Axis around data lo .. hi (finite, lo <= hi), padded by `pad` times their range on either side
 * (a single value v is first widened to v +- 10%, or +-1 for 0). The tick step is the smallest of
 * 1, 2, 5 x 10^k leaving at most MAX_TICKS ticks inside the padded range. If that leaves fewer
 * than MIN_TICKS, the axis is extended to the nearer tick outside it, or to the ticks on both
 * sides when two are missing: the step before left more than MAX_TICKS inside, so the range spans
 * at least 6 / 2.5 = 2.4 steps (steps grow at most 2.5 times) and at least 2 ticks lie inside. */
static axis axis_make(double lo, double hi, double pad) {
  if (lo == hi) {
    double widen = lo == 0.0 ? 1.0 : 0.1 * fabs(lo);
    lo -= widen;
    hi += widen;
  }
  double range = hi - lo;
  axis a = {lo - pad * range, hi + pad * range, 0.0, 0.0, 0};
  static const double mantissas[3] = {1.0, 2.0, 5.0};
  int e0 = (int)floor(log10(a.hi - a.lo)) - 1; /* the first step leaves at least 10 ticks */
  for (int c = 0;; c++) {
    a.step = mantissas[c % 3] * pow(10.0, e0 + c / 3);
    /* a tick within 1e-9 steps of a limit counts as on it */
    double k0 = ceil(a.lo / a.step - 1e-9), k1 = floor(a.hi / a.step + 1e-9);
    if (k1 - k0 + 1 > MAX_TICKS)
      continue;
    a.k0 = k0;
    a.nticks = (int)(k1 - k0) + 1;
    if (a.nticks < MIN_TICKS) {
      double below = (k0 - 1) * a.step, above = (k1 + 1) * a.step;
      int lower = a.nticks < MIN_TICKS - 1 || a.lo - below <= above - a.hi;
      int upper = a.nticks < MIN_TICKS - 1 || !lower;
      if (lower) {
        a.lo = below;
        a.k0 = k0 - 1;
      }
      if (upper)
        a.hi = above;
      a.nticks += lower + upper;
    }
    return a;
  }
}

static double axis_tick(const axis *a, int i) { return (a->k0 + i) * a->step; }

/* A tick value as text with as many decimals as the step needs ("%g" for very large or small
 * values). */
static void format_tick(char *text, size_t size, const axis *a, int i) {
  double v = axis_tick(a, i);
  if (fabs(v) < 1e-9 * a->step)
    v = 0.0; /* not "-0" */
  int decimals = a->step >= 1.0 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
  if (fabs(v) >= 1e7 || decimals > 6)
    snprintf(text, size, "%g", v);
  else
    snprintf(text, size, "%.*f", decimals, v);
}

/* Width in pixels of the widest tick label of the axis. */
static int tick_labels_width(const axis *a) {
  int width = 0;
  for (int i = 0; i < a->nticks; i++) {
    char label[32];
    format_tick(label, sizeof label, a, i);
    if (text_width(label) > width)
      width = text_width(label);
  }
  return width;
}

/* Draws text rotated a quarter turn anticlockwise (read upwards), with the bottom-left corner of
 * its first character at (x, y). */
static void draw_text_up(image *im, int x, int y, const char *text, colour c) {
  draw_glyphs(im, x, y, text, c, 1);
}

static int pixel_x(const rect *area, const axis *x, double t) {
  return area->x + (int)lround((t - x->lo) / (x->hi - x->lo) * (area->w - 1));
}

static int pixel_y(const rect *area, const axis *y, double v) {
  return area->y + (int)lround((y->hi - v) / (y->hi - y->lo) * (area->h - 1));
}

/* Draws one series as a line through its finite points, broken where values are NaN or
 * infinite. Consecutive points falling in the same pixel column are drawn as one vertical stroke
 * from their lowest to their highest pixel, and a line joins the column's last point to the next
 * column's first: the pixels of every segment, but at most one stroke per column however many
 * points there are. A stretch between gaps that fits in one column (an isolated point) gets a
 * square marker so that it stays visible. */
static void draw_series(pen *p, const rect *area, const axis *x_axis, const axis *y_axis, int n,
                        const double *t, const double *y) {
  int in_line = 0, columns = 0;          /* in a stretch of finite points, over `columns` columns */
  int col = 0, lo = 0, hi = 0, last = 0; /* the current column and its points' rows */
  for (int k = 0; k <= n; k++) {
    int finite = k < n && isfinite(y[k]);
    int px = finite ? pixel_x(area, x_axis, t[k]) : 0;
    int py = finite ? pixel_y(area, y_axis, y[k]) : 0;
    if (in_line && finite && px == col) {
      lo = py < lo ? py : lo;
      hi = py > hi ? py : hi;
      last = py;
      continue;
    }
    if (in_line)
      pen_line(p, col, lo, col, hi);
    if (!finite) {
      if (in_line && columns == 1)
        pen_square(p, col - MARKER_SIZE / 2, (lo + hi) / 2 - MARKER_SIZE / 2, MARKER_SIZE);
      in_line = 0;
      continue;
    }
    if (in_line)
      pen_line(p, col, last, px, py);
    else
      columns = 0;
    in_line = 1;
    columns++;
    col = px;
    lo = hi = last = py;
  }
}

/* The legend of one panel: how many of its series are listed, in how many columns. */
static int legend_shown(int nseries, int max_columns) {
  return nseries <= LEGEND_ROWS * max_columns ? nseries : LEGEND_ROWS * max_columns - 1;
}

static int legend_columns(int nseries, int max_columns) {
  int columns = (nseries + LEGEND_ROWS - 1) / LEGEND_ROWS;
  return columns < 1 ? 1 : columns > max_columns ? max_columns : columns;
}

/* Draws the legend of a panel with its top-left corner at (x, y): up to `max_columns` columns
 * `column_width` pixels wide of a line sample and a label (cut at `chars` characters) per
 * series, filled top to bottom; the series that do not fit are counted in a last entry
 * "+N more". */
static void draw_legend(image *im, int x, int y, const ts_plot_panel *panel, int column_width,
                        int chars, int max_columns) {
  int shown = legend_shown(panel->nseries, max_columns);
  rect everywhere = {0, 0, im->width, im->height};
  char label[LEGEND_MAX_CHARS + 1];
  for (int s = 0; s <= shown && s < panel->nseries; s++) {
    int entry_x = x + s / LEGEND_ROWS * (column_width + LEGEND_GAP);
    int text_y = y + s % LEGEND_ROWS * LEGEND_ROW + (LEGEND_ROW - LINE_HEIGHT) / 2;
    if (s == shown) {
      snprintf(label, sizeof label, "+%d more", panel->nseries - shown);
      draw_text(im, entry_x, text_y, label, black);
      continue;
    }
    pen p = {
        .im = im, .clip = everywhere, .c = series_colours[s % 10], .pattern = &dashes[s / 10 % 4]};
    int line_y = text_y + LINE_HEIGHT / 2 - 1;
    pen_line(&p, entry_x, line_y, entry_x + LEGEND_SWATCH - 1, line_y);
    snprintf(label, (size_t)chars + 1, "%s", panel->series[s].label ? panel->series[s].label : "");
    draw_text(im, entry_x + LEGEND_SWATCH + LEGEND_LABEL_GAP, text_y, label, black);
  }
}

/* Draws panel `panel` with the inside of its frame at `area`: grid lines, the series, the frame
 * with ticks and their labels on both axes, the rotated y label at the left edge of the image
 * and the title above. */
static void draw_panel(image *im, const rect *area, const axis *x_axis, const axis *y_axis,
                       const ts_plot_panel *panel, int n, const double *t) {
  for (int i = 0; i < x_axis->nticks; i++)
    fill_rect(im, pixel_x(area, x_axis, axis_tick(x_axis, i)), area->y, 1, area->h, grid_grey);
  for (int i = 0; i < y_axis->nticks; i++)
    fill_rect(im, area->x, pixel_y(area, y_axis, axis_tick(y_axis, i)), area->w, 1, grid_grey);
  for (int s = 0; s < panel->nseries; s++) {
    pen p = {.im = im, .clip = *area, .c = series_colours[s % 10], .pattern = &dashes[s / 10 % 4]};
    draw_series(&p, area, x_axis, y_axis, n, t, panel->series[s].y);
  }
  int left = area->x - 1, right = area->x + area->w, top = area->y - 1, bottom = area->y + area->h;
  fill_rect(im, left, top, right - left + 1, 1, black);
  fill_rect(im, left, bottom, right - left + 1, 1, black);
  fill_rect(im, left, top, 1, bottom - top + 1, black);
  fill_rect(im, right, top, 1, bottom - top + 1, black);
  char label[32];
  for (int i = 0; i < x_axis->nticks; i++) {
    int x = pixel_x(area, x_axis, axis_tick(x_axis, i));
    format_tick(label, sizeof label, x_axis, i);
    fill_rect(im, x, bottom + 1, 1, TICK_LENGTH, black);
    draw_text(im, x - text_width(label) / 2, bottom + 1 + TICK_LENGTH + TICK_LABEL_GAP, label,
              black);
  }
  for (int i = 0; i < y_axis->nticks; i++) {
    int y = pixel_y(area, y_axis, axis_tick(y_axis, i));
    format_tick(label, sizeof label, y_axis, i);
    fill_rect(im, left - TICK_LENGTH, y, TICK_LENGTH, 1, black);
    draw_text(im, left - TICK_LENGTH - TICK_LABEL_GAP - text_width(label), y - LINE_HEIGHT / 2,
              label, black);
  }
  if (panel->y_label)
    draw_text_up(im, MARGIN, area->y + area->h / 2 + text_width(panel->y_label) / 2, panel->y_label,
                 black);
  if (panel->title)
    draw_text(im, area->x + (area->w - text_width(panel->title)) / 2, top - TITLE_GAP - LINE_HEIGHT,
              panel->title, black);
}

ts_status ts_png_write_plot(const char *path, int n, const double *t, const char *t_label,
                            int npanels, const ts_plot_panel *panels, const char *title) {
  if (n < 1)
    return ts_error(TS_ERR_INPUT, "%s: a plot of %d points: at least one is needed", path, n);
  if (npanels < 1 || npanels > MAX_PLOT_PANELS)
    return ts_error(TS_ERR_INPUT, "%s: a plot of %d panels: 1 to %d can be drawn", path, npanels,
                    MAX_PLOT_PANELS);
  for (int p = 0; p < npanels; p++)
    if (panels[p].nseries < 0)
      return ts_error(TS_ERR_INPUT, "%s: panel %d has %d series", path, p + 1, panels[p].nseries);
  for (int k = 0; k < n; k++) {
    if (!isfinite(t[k]))
      return ts_error(TS_ERR_INPUT, "%s: time %d is %g: times must be finite", path, k, t[k]);
    if (k > 0 && t[k] < t[k - 1])
      return ts_error(TS_ERR_INPUT,
                      "%s: time %d (%g) is before time %d (%g): times must not decrease", path, k,
                      t[k], k - 1, t[k - 1]);
  }

  /* Axes: the time axis spans the times exactly, each y axis its panel's finite values + 5%. */
  axis x_axis = axis_make(t[0], t[n - 1], 0.0), y_axes[MAX_PLOT_PANELS];
  if (!isfinite(x_axis.hi - x_axis.lo))
    return ts_error(TS_ERR_INPUT, "%s: times from %g to %g span too wide a range", path, t[0],
                    t[n - 1]);
  for (int p = 0; p < npanels; p++) {
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < panels[p].nseries; s++)
      for (int k = 0; k < n; k++) {
        double v = panels[p].series[s].y[k];
        if (isfinite(v)) {
          lo = v < lo ? v : lo;
          hi = v > hi ? v : hi;
        }
      }
    if (lo > hi) { /* no finite value: an empty panel from 0 to 1 */
      lo = 0.0;
      hi = 1.0;
    }
    y_axes[p] = axis_make(lo, hi, 0.05);
    if (!isfinite(y_axes[p].hi - y_axes[p].lo))
      return ts_error(TS_ERR_INPUT, "%s: panel %d: values from %g to %g span too wide a range",
                      path, p + 1, lo, hi);
  }

  /* The legend: columns wide enough for the longest label, as many as needed up to
   * LEGEND_MAX_WIDTH, and the same for every panel so that the frames line up. */
  int chars = LEGEND_MIN_CHARS;
  for (int p = 0; p < npanels; p++)
    for (int s = 0; s < panels[p].nseries; s++) {
      const char *label = panels[p].series[s].label;
      int len = label ? (int)strlen(label) : 0;
      len = len > LEGEND_MAX_CHARS ? LEGEND_MAX_CHARS : len;
      chars = len > chars ? len : chars;
    }
  int column_width = LEGEND_SWATCH + LEGEND_LABEL_GAP + chars * GLYPH_ADVANCE;
  int max_columns = (LEGEND_MAX_WIDTH + LEGEND_GAP) / (column_width + LEGEND_GAP);
  int columns = 1;
  for (int p = 0; p < npanels; p++) {
    int c = legend_columns(panels[p].nseries, max_columns);
    columns = c > columns ? c : columns;
  }
  int legend_width = columns * column_width + (columns - 1) * LEGEND_GAP;

  /* The frames: the y label and tick labels to their left, the legend to their right. */
  int ticks_width = 0;
  for (int p = 0; p < npanels; p++) {
    int w = tick_labels_width(&y_axes[p]);
    ticks_width = w > ticks_width ? w : ticks_width;
  }
  rect area;
  area.x = MARGIN + LINE_HEIGHT + Y_LABEL_GAP + ticks_width + TICK_LABEL_GAP + TICK_LENGTH + 1;
  area.w = PLOT_WIDTH - MARGIN - legend_width - LEGEND_GAP - 1 - area.x;
  area.h = PLOT_AREA_HEIGHT;

  image im = {PLOT_WIDTH, 2 * PLOT_HEADER + npanels * PLOT_PANEL_HEIGHT, NULL};
  im.rgb = malloc((size_t)im.width * im.height * 3);
  if (!im.rgb)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory for a %d x %d image", path, im.width,
                    im.height);
  fill_rect(&im, 0, 0, im.width, im.height, white);
  for (int p = 0; p < npanels; p++) {
    area.y = PLOT_HEADER + p * PLOT_PANEL_HEIGHT + FRAME_TOP + 1;
    draw_panel(&im, &area, &x_axis, &y_axes[p], &panels[p], n, t);
    draw_legend(&im, area.x + area.w + 1 + LEGEND_GAP, area.y, &panels[p], column_width, chars,
                max_columns);
  }
  if (title)
    draw_text(&im, (im.width - text_width(title)) / 2, MARGIN, title, black);
  if (t_label)
    draw_text(&im, area.x + (area.w - text_width(t_label)) / 2, im.height - PLOT_HEADER + MARGIN,
              t_label, black);
  return write_png(path, &im);
}
