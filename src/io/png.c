/* PNG maps: water depth (hill-shaded bed in grey, water in a blue colour map blended over it) or
 * any scalar field (viridis colour map), with a colour bar with labels on the right and a title,
 * drawn with a built-in 5x7 bitmap font and written with libpng's simplified API. North (row
 * j = 0 at the bottom) is up. */
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

/* Draws text with its top-left corner at (x, y); characters without a glyph are blank. */
static void draw_text(image *im, int x, int y, const char *text, colour c) {
  for (; *text; text++, x += GLYPH_ADVANCE) {
    const glyph *g = find_glyph(*text);
    if (!g)
      continue;
    for (int row = 0; row < GLYPH_H; row++)
      for (int col = 0; col < GLYPH_W; col++)
        if (g->rows[row] & (1u << (GLYPH_W - 1 - col)))
          fill_rect(im, x + col * TEXT_SCALE, y + row * TEXT_SCALE, TEXT_SCALE, TEXT_SCALE, c);
  }
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
