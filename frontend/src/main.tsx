import { QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { createBrowserRouter, RouterProvider } from "react-router";
import { prefetchSession } from "./api/loadedProfile";
import "./index.css";
import { createQueryClient } from "./queryClient";
import { routes } from "./routes";

const queryClient = createQueryClient();
void prefetchSession(queryClient);
const router = createBrowserRouter(routes);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
