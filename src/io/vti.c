/* VTK XML ImageData (.vti) output for ParaView: the grid as an image of cells, one Float32
 * CellData array per variable stored inline as base64 (UInt32 byte-count header, then data),
 * and the simulation time as TimeValue field data. */
#include "tessera/io.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char base64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Writes `size` bytes as base64 with '=' padding. */
static void write_base64(FILE *f, const unsigned char *bytes, size_t size) {
  char quad[4];
  for (size_t k = 0; k < size; k += 3) {
    size_t left = size - k;
    uint32_t triple = (uint32_t)bytes[k] << 16;
    if (left > 1)
      triple |= (uint32_t)bytes[k + 1] << 8;
    if (left > 2)
      triple |= bytes[k + 2];
    quad[0] = base64_digits[(triple >> 18) & 63];
    quad[1] = base64_digits[(triple >> 12) & 63];
    quad[2] = left > 1 ? base64_digits[(triple >> 6) & 63] : '=';
    quad[3] = left > 2 ? base64_digits[triple & 63] : '=';
    fwrite(quad, 1, 4, f);
  }
}

static void write_xml_escaped(FILE *f, const char *text) {
  for (; *text; text++) {
    switch (*text) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc(*text, f);
    }
  }
}

static int host_is_little_endian(void) {
  const uint16_t probe = 1;
  unsigned char first;
  memcpy(&first, &probe, 1);
  return first == 1;
}

ts_status ts_vti_write(const char *path, const ts_raster *geom, double time, int nvars,
                       const ts_out_var *vars) {
  size_t cells = (size_t)geom->ncols * (size_t)geom->nrows;
  if (cells * sizeof(float) > UINT32_MAX)
    return ts_error(TS_ERR_INPUT, "%s: grid too large for a VTK UInt32 header", path);
  float *values = malloc(cells * sizeof *values);
  if (!values)
    return ts_error(TS_ERR_NOMEM, "%s: out of memory", path);
  char tmp_path[4096];
  FILE *f = ts_open_temp(path, tmp_path, sizeof tmp_path);
  if (!f) {
    free(values);
    return TS_ERR_IO;
  }
  fprintf(f, "<?xml version=\"1.0\"?>\n");
  fprintf(f,
          "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"%s\" "
          "header_type=\"UInt32\">\n",
          host_is_little_endian() ? "LittleEndian" : "BigEndian");
  fprintf(f,
          "  <ImageData WholeExtent=\"0 %d 0 %d 0 0\" Origin=\"%.17g %.17g 0\" "
          "Spacing=\"%.17g %.17g 1\">\n",
          geom->ncols, geom->nrows, geom->xll, geom->yll, geom->cellsize, geom->cellsize);
  fprintf(f, "    <FieldData>\n");
  fprintf(f,
          "      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" "
          "format=\"ascii\">%.17g</DataArray>\n",
          time);
  fprintf(f, "    </FieldData>\n");
  fprintf(f, "    <Piece Extent=\"0 %d 0 %d 0 0\">\n", geom->ncols, geom->nrows);
  fprintf(f, "      <PointData>\n      </PointData>\n");
  fprintf(f, "      <CellData>\n");
  uint32_t byte_count = (uint32_t)(cells * sizeof(float));
  for (int k = 0; k < nvars; k++) {
    for (size_t c = 0; c < cells; c++)
      values[c] = (float)vars[k].v[c];
    fprintf(f, "        <DataArray type=\"Float32\" Name=\"");
    write_xml_escaped(f, vars[k].name);
    fprintf(f, "\" format=\"binary\">\n          ");
    write_base64(f, (const unsigned char *)&byte_count, sizeof byte_count);
    write_base64(f, (const unsigned char *)values, cells * sizeof *values);
    fprintf(f, "\n        </DataArray>\n");
  }
  fprintf(f, "      </CellData>\n");
  fprintf(f, "    </Piece>\n");
  fprintf(f, "  </ImageData>\n");
  fprintf(f, "</VTKFile>\n");
  free(values);
  return ts_commit_temp(f, tmp_path, path);
}
