import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import reactRefresh from "eslint-plugin-react-refresh";
import globals from "globals";
import tseslint from "typescript-eslint";

const CROSS_PAGE =
  "Pages do not import from one another: move what they share to src/components or src/lib.";

export default tseslint.config(
  { ignores: ["dist", "src/api/schema.d.ts"] },
  {
    files: ["**/*.{ts,tsx}"],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: {
      ecmaVersion: 2022,
      globals: globals.browser,
    },
    plugins: {
      "react-hooks": reactHooks,
      "react-refresh": reactRefresh,
    },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "react-refresh/only-export-components": ["warn", { allowConstantExport: true }],
    },
  },
  // A page folder holds only its page: what two pages share lives in src/components or src/lib,
  // so a page can move or change without breaking another. Page folders are flat.
  {
    files: ["src/pages/*/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [{ regex: "^\\.\\./(?!\\.)|(^|/)pages/", message: CROSS_PAGE }],
        },
      ],
    },
  },
  {
    files: ["src/pages/*.{ts,tsx}"],
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: "^\\./", message: CROSS_PAGE }] }],
    },
  },
);
